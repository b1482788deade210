//go:build system

package patronitest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// envLeftovers makes TestLeaveClusterBehind run: it is the child of
// TestNothingOutlivesTheBinary.
const envLeftovers = "PATRONITEST_TEST_LEFTOVERS"

// TestNothingOutlivesTheBinary runs this test binary again as a child that
// starts a cluster (etcd, three Patronis, the three PostgreSQL servers they
// start in sessions of their own) and is then killed (SIGKILL: no cleanup
// at all). Afterwards none of those processes may live and the cluster's
// directory must be gone.
func TestNothingOutlivesTheBinary(t *testing.T) {
	if os.Getenv(envLeftovers) != "" {
		t.Skip("the child itself")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaveClusterBehind$", "-test.v")
	cmd.Env = append(os.Environ(), envLeftovers+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr // Wait waits for the child's reaper too, which shares it
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	var dir string
	var pids []int
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "leftovers" {
			continue
		}
		dir = f[1]
		for _, s := range f[2:] {
			n, _ := strconv.Atoi(s)
			pids = append(pids, n)
		}
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Wait()
	if dir == "" {
		t.Fatalf("the child never started its cluster:\n%s%s", out.String(), stderr.String())
	}
	_, reaper, _ := strings.Cut(stderr.String(), "proctest: ")
	t.Logf("the child's reaper said: %s", reaper)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, pid := range pids {
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
				if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && !strings.HasPrefix(string(stat[i:]), ") Z") {
					left = append(left, strconv.Itoa(pid))
				}
			}
		}
		if _, err := os.Stat(dir); err == nil {
			left = append(left, dir)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLeaveClusterBehind starts a cluster, prints its directory and the
// pids of its processes, and waits to be killed.
func TestLeaveClusterBehind(t *testing.T) {
	if os.Getenv(envLeftovers) == "" {
		return // it runs only as the child of TestNothingOutlivesTheBinary
	}
	c := Start(t, Options{})
	pids := []string{strconv.Itoa(c.etcd.cmd.Process.Pid)}
	for _, n := range c.Nodes {
		pids = append(pids, strconv.Itoa(n.patroni.cmd.Process.Pid))
		for _, pid := range n.postgresPIDs() {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	fmt.Printf("leftovers %s %s\n", c.dir, strings.Join(pids, " "))
	select {}
}
