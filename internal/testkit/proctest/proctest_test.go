package proctest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

func TestMain(m *testing.M) { os.Exit(proctest.Main(m)) }

// envChild makes TestLeaveBehind run: it is the child test binary of
// TestNothingOutlivesTheBinary.
const envChild = "PROCTEST_TEST_CHILD"

// TestNothingOutlivesTheBinary runs this test binary again as a child that
// starts processes (one escaping its process group, one also without the
// mark, working in a registered directory) and then dies: by go test's
// -timeout panic, or by SIGKILL. Afterwards none of those processes may
// live, and neither the registered directory nor the child's TMPDIR may
// exist.
func TestNothingOutlivesTheBinary(t *testing.T) {
	for _, death := range []string{"timeout", "kill"} {
		t.Run(death, func(t *testing.T) {
			tag := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1e9)
			child := runChild(t, death, "^TestLeaveBehind$", tag)
			if death == "timeout" && !strings.Contains(child.stderr, "test timed out") {
				t.Errorf("the child did not end by -timeout; stderr:\n%s", child.stderr)
			}
			if !strings.Contains(child.stderr, "killed them") {
				t.Errorf("the reaper did not say what it killed; stderr:\n%s", child.stderr)
			}
			waitGone(t, tag, child.dirs...)
		})
	}
}

// TestLeaveBehind is the child of TestNothingOutlivesTheBinary: it starts
// sleeps, prints "ready" and the directories to check, and waits for its
// end.
func TestLeaveBehind(t *testing.T) {
	tag := os.Getenv(envChild)
	if tag == "" {
		return // it runs only as the child of TestNothingOutlivesTheBinary
	}
	dir, err := proctest.MkdirTemp("", "proctest-child-")
	if err != nil {
		t.Fatal(err)
	}
	// A sleep in the child's group; one in a session of its own (setsid);
	// one without the mark in its environment, working in dir. Only the
	// shell gets the parent-death signal.
	script := fmt.Sprintf(`sleep %[1]s & setsid sleep %[1]s & (cd %[2]q && exec env -u PLANTSTORE_PROCTEST_OWNER sleep %[1]s) & wait`, tag, dir)
	cmd := exec.Command("sh", "-c", script)
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	sleeps := func() (n int) {
		for _, p := range findTagged(tag) {
			if _, cmd, _ := strings.Cut(p, " "); cmd == "sleep "+tag+" " {
				n++
			}
		}
		return n
	}
	for sleeps() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the sleeps did not start: %v", findTagged(tag))
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("ready %s %s\n", dir, os.TempDir())
	select {} // until -timeout's panic or SIGKILL
}

// child is what runChild saw of a child test binary.
type child struct {
	dirs   []string // the directories it printed after "ready"
	stderr string
}

// runChild runs this test binary's test run as a child with envChild set
// to tag, and lets it die by death: "timeout" (a -test.timeout of 2 s
// after its tests begin) or "kill" (SIGKILL once it printed "ready"). It
// returns once the child and its reaper have exited.
func runChild(t *testing.T, death, run, tag string) child {
	t.Helper()
	timeout := "10m"
	if death == "timeout" {
		timeout = "2s"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.timeout="+timeout)
	cmd.Env = append(os.Environ(), envChild+"="+tag, "TMPDIR="+t.TempDir())
	var stderr strings.Builder
	// Wait returns once every holder of stderr closed it: the child and
	// its reaper, which inherits it.
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	var c child
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "ready" {
			c.dirs = f[1:]
			if death == "kill" {
				syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}
	cmd.Wait()
	c.stderr = stderr.String()
	if c.dirs == nil {
		t.Fatalf("the child never got ready; stderr:\n%s", c.stderr)
	}
	return c
}

// findTagged returns the live processes whose command line holds tag.
func findTagged(tag string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), tag) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			continue // a zombie: dead, not yet reaped by init
		}
		found = append(found, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

// waitGone waits, at most 10 s, until no process holds tag in its command
// line and none of dirs exists.
func waitGone(t *testing.T, tag string, dirs ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs := findTagged(tag)
		var left []string
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				left = append(left, d)
			}
		}
		if len(procs) == 0 && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: processes %q, directories %q", procs, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
