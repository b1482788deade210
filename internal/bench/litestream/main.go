// Command litestream measures what Litestream keeps of a loaded plantstore:
// it runs `plantstore serve` on a new SQLite file and `litestream replicate`
// with a directory replica beside it, creates plants on loopback for a
// while, SIGKILLs both, runs `litestream restore`, and compares the restored
// ids with the acknowledged ones: how old the newest missing acknowledged
// write was, the WAL's largest size, Litestream's generations and sync
// errors. The table of docs/deployment.md ("Litestream") came from it:
//
//	go build -o /tmp/plantstore ./cmd/plantstore
//	go run ./internal/bench/litestream -plantstore /tmp/plantstore -autocheckpoint 1000 -for 30s [-rate 1000] [-sync 100ms -monitor 100ms]
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	autockpt := flag.String("autocheckpoint", "1000", "serve --sqlite-wal-autocheckpoint")
	dur := flag.Duration("for", 30*time.Second, "load duration")
	clients := flag.Int("clients", 8, "")
	syncInt := flag.String("sync", "1s", "litestream sync-interval")
	monInt := flag.String("monitor", "1s", "litestream monitor-interval")
	nols := flag.Bool("nolitestream", false, "")
	rate := flag.Float64("rate", 0, "creates/s over all clients (0: as fast as possible)")
	plantstore := flag.String("plantstore", "plantstore", "the plantstore binary")
	litestream := flag.String("litestream", "tools/node_modules/@flydotio/litestream-linux-x64/litestream", "the litestream binary")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, _ := os.MkdirTemp("", "lsexp-")
	db := filepath.Join(dir, "p.db")
	cfg := filepath.Join(dir, "litestream.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("dbs:\n  - path: %s\n    monitor-interval: %s\n    replicas:\n      - type: file\n        path: %s\n        sync-interval: %s\n", db, *monInt, filepath.Join(dir, "replica"), *syncInt)), 0o644)
	secret := "experiment-token-0123456789abcdef0123"
	serve := exec.Command(*plantstore, "serve", "--db", db, "--create-db", "--addr", addr, "--metrics-addr=",
		"--bootstrap-token", secret, "--rate-limit", "0", "--sqlite-wal-autocheckpoint", *autockpt)
	serve.Stderr, _ = os.Create(filepath.Join(dir, "serve.log"))
	if err := serve.Start(); err != nil {
		panic(err)
	}
	for i := 0; ; i++ {
		if i == 200 {
			panic("plantstore serve did not start: see " + dir)
		}
		if r, err := http.Get("http://" + addr + "/healthz"); err == nil && r.StatusCode == 200 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lsLog, _ := os.Create(filepath.Join(dir, "litestream.log"))
	ls := exec.Command(*litestream, "replicate", "-config", cfg)
	ls.Stdout, ls.Stderr = lsLog, lsLog
	if *nols {
		ls = exec.Command("sleep", "1000")
	}
	if err := ls.Start(); err != nil {
		panic(err)
	}
	time.Sleep(2 * time.Second)
	var mu sync.Mutex
	acked := map[int64]time.Time{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: *clients}
	cl := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	var maxLat atomic.Int64
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tick *time.Ticker
			if *rate > 0 {
				tick = time.NewTicker(time.Duration(float64(*clients) / *rate * float64(time.Second)))
			}
			for i := int64(1); !stop.Load(); i++ {
				if tick != nil {
					<-tick.C
				}
				id := int64(c)*10_000_000 + i
				body := fmt.Sprintf(`{"id":%d,"name":"Plant %d %s"}`, id, id, strings.Repeat("x", 100))
				req, _ := http.NewRequest("POST", "http://"+addr+"/plants", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+secret)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				res, err := cl.Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if l := time.Since(t0); int64(l) > maxLat.Load() {
					maxLat.Store(int64(l))
				}
				if res.StatusCode == 200 {
					now := time.Now()
					mu.Lock()
					acked[id] = now
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	var maxWAL int64
	for time.Since(start) < *dur {
		time.Sleep(time.Second)
		if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > maxWAL {
			maxWAL = fi.Size()
		}
	}
	kill := time.Now()
	serve.Process.Signal(syscall.SIGKILL)
	ls.Process.Signal(syscall.SIGKILL)
	serve.Wait()
	ls.Wait()
	stop.Store(true)
	wg.Wait()
	lsLog.Close()
	if *nols {
		fmt.Printf("no litestream, autocheckpoint=%s: acked=%d (%.0f/s) maxWAL=%d\n", *autockpt, len(acked), float64(len(acked))/dur.Seconds(), maxWAL)
		return
	}
	restored := filepath.Join(dir, "restored.db")
	out, err := exec.Command(*litestream, "restore", "-o", restored, "-config", cfg, db).CombinedOutput()
	if err != nil {
		fmt.Printf("restore: %v %s\n", err, out)
	}
	have := map[string]bool{}
	rdb, err := sql.Open("sqlite3", "file:"+restored+"?mode=ro")
	if err != nil {
		panic(err)
	}
	rows, err := rdb.Query(`SELECT id FROM plants`)
	if err != nil {
		fmt.Println("restored database:", err)
	} else {
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			have[fmt.Sprint(id)] = true
		}
		rows.Close()
	}
	rdb.Close()
	var missing, missingOld int
	var oldestMissing time.Duration
	for id, at := range acked {
		if !have[fmt.Sprint(id)] {
			missing++
			age := kill.Sub(at)
			if age > oldestMissing {
				oldestMissing = age
			}
			if age > 2*time.Second {
				missingOld++
			}
		}
	}
	logb, _ := os.ReadFile(filepath.Join(dir, "litestream.log"))
	gens := strings.Count(string(logb), "new generation")
	du, _ := exec.Command("du", "-sb", filepath.Join(dir, "replica")).Output()
	gdirs, _ := filepath.Glob(filepath.Join(dir, "replica", "generations", "*"))
	errs := strings.Count(string(logb), "sync error")
	fmt.Printf("sync errors=%d ", errs)
	fmt.Printf("autocheckpoint=%s sync=%s monitor=%s: acked=%d (%.0f/s) restored=%d missing=%d (older than 2s: %d; oldest missing acked %v before kill) maxWAL=%d bytes, litestream 'new generation' log lines=%d, generations on replica=%d, replica size=%s max create latency=%v dir=%s\n",
		*autockpt, *syncInt, *monInt, len(acked), float64(len(acked))/dur.Seconds(), len(have), missing, missingOld, oldestMissing, maxWAL, gens, len(gdirs), strings.Fields(string(du))[0], time.Duration(maxLat.Load()), dir)
}
