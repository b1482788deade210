package pgtest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// envLeftovers makes TestMain start a cluster, a backend of it, a
// PgBouncer and a sleep before the tests begin: this test binary is then
// the child of TestNothingOutlivesTheBinary.
const envLeftovers = "PGTEST_TEST_LEFTOVERS"

// TestNothingOutlivesTheBinary runs this test binary again as a child that
// starts a PostgreSQL cluster (postmaster, its background processes and a
// backend), a PgBouncer and a sleep, then dies by go test's -timeout
// panic, which runs no cleanup. Afterwards none of those processes may
// live, and the TMPDIR the child was given must be empty.
func TestNothingOutlivesTheBinary(t *testing.T) {
	if os.Getenv(envLeftovers) != "" {
		t.Skip("the child itself")
	}
	if _, err := osexec.LookPath("pgbouncer"); err != nil && !isFile("/usr/sbin/pgbouncer") {
		t.Skip("pgbouncer is not installed")
	}
	pgtest.Program(t, "postgres") // skips or fails without PostgreSQL
	// The child's -test.timeout counts from the start of its tests, which
	// TestMain runs only once everything is started.
	cmd := osexec.Command(os.Args[0], "-test.run=^TestWaitForTimeout$", "-test.timeout=1s")
	// Not t.TempDir, which is 0700 in a 0700 directory: PostgreSQL runs as
	// postgres when the tests run as root.
	tmp, err := proctest.MkdirTemp("", "pgtest-leftovers-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), envLeftovers+"=1", "TMPDIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr // Wait waits for the child's reaper too, which shares it
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	var pids []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		for f := range strings.FieldsSeq(sc.Text()) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			} else if strings.HasPrefix(f, "/") {
				dirs = append(dirs, f)
			}
		}
	}
	cmd.Wait()
	if !strings.Contains(stderr.String(), "panic: test timed out") {
		t.Fatalf("the child did not end by -timeout; it said:\n%s", stderr.String())
	}
	_, reaper, _ := strings.Cut(stderr.String(), "proctest: ")
	t.Logf("the child ran %v; its reaper said: %s", time.Since(start).Round(time.Millisecond), reaper)
	if len(pids) < 4 || len(dirs) < 2 {
		t.Fatalf("the child started pids %v, directories %v: want a postmaster, a backend, a PgBouncer and a sleep, and two directories", pids, dirs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var alive []string
		for _, pid := range pids {
			if s := live(pid); s != "" {
				alive = append(alive, s)
			}
		}
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			alive = append(alive, filepath.Join(tmp, e.Name()))
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %q", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWaitForTimeout waits for the child's -test.timeout.
func TestWaitForTimeout(t *testing.T) {
	if os.Getenv(envLeftovers) == "" {
		return // it runs only as the child of TestNothingOutlivesTheBinary
	}
	select {}
}

// conn is the child's connection: a backend to leave behind, kept in a
// global so that no finalizer closes it.
var conn *pgx.Conn

// startLeftovers starts what the child leaves behind and prints its pids
// and directories on standard output, once each is running.
func startLeftovers() error {
	c, err := pgtest.NewCluster()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if conn, err = pgx.Connect(ctx, c.URL("")); err != nil {
		return err
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return err
	}
	b, err := pgtest.NewPgBouncer(c.URL(""), pgtest.PgBouncerOptions{})
	if err != nil {
		return err
	}
	sleep := osexec.Command("sleep", "1000")
	if err := proctest.Start(sleep); err != nil {
		return err
	}
	pidFile, err := os.ReadFile(filepath.Join(c.SocketDir(), "data", "postmaster.pid"))
	if err != nil {
		return err
	}
	postmaster, _, _ := strings.Cut(string(pidFile), "\n")
	fmt.Printf("%s %d %d %d %s %s\n", postmaster, backend, b.PID(), sleep.Process.Pid, c.SocketDir(), b.Dir())
	return nil
}

// live describes pid if it runs (a zombie does not), or returns "".
func live(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || strings.HasPrefix(string(stat[i:]), ") Z") {
		return ""
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
}

func isFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
