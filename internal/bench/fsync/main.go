// Command fsync measures what one durable commit costs the disk: appending
// 4 KiB to a file and fdatasync-ing it (what a SQLite WAL commit does with
// --durability full), repeated, and prints the latency percentiles. The
// target "POST c=1 p50 <= baseline + one fsync" of docs/performance.md is
// read against its p50. cpu_us is the process's CPU time (user and
// system) per append and fdatasync: what issuing one costs this machine,
// the floor under a durable commit's CPU.
//
//	fsync [-n 2000] [-dir DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plantstore/plantstore/internal/bench/proccpu"
)

func main() {
	n := flag.Int("n", 2000, "appends to time")
	dir := flag.String("dir", os.TempDir(), "directory of the file (the disk to measure)")
	flag.Parse()
	if err := run(*n, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "fsync:", err)
		os.Exit(1)
	}
}

func run(n int, dir string) error {
	f, err := os.CreateTemp(dir, "fsync-*.dat")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	took := make([]time.Duration, 0, n)
	cpu0, err := proccpu.Used()
	if err != nil {
		return err
	}
	for range n {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return err
		}
		took = append(took, time.Since(start))
	}
	cpu1, err := proccpu.Used()
	if err != nil {
		return err
	}
	slices.Sort(took)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d.Microseconds())/1000) }
	fmt.Printf("p50_ms=%s p90_ms=%s p99_ms=%s n=%d cpu_us=%.1f\n", ms(took[n/2]), ms(took[n*9/10]), ms(took[n*99/100]), n,
		float64((cpu1-cpu0).Nanoseconds())/1000/float64(n))
	return nil
}
