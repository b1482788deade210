// Package proctest makes sure nothing a test binary starts outlives it: its
// children die, and its registered temporary directories go, however the
// binary ends (tests done, a panic such as -timeout's, which runs no
// cleanup, or a kill).
//
// Start gives each child a process group, a parent-death signal (SIGKILL,
// sent when the forking thread exits: every child is forked from one
// goroutine locked to its thread) and the binary's mark, an environment
// variable its descendants inherit. The first use starts a reaper, the test
// binary again in a mode of its own, reading a pipe only the binary writes:
// at end of file it kills every process with the mark or working in a
// registered directory (PostgreSQL's backends leave the group and overwrite
// their environment), then removes the directories.
//
// Main, for TestMain (pgtest.Run calls it), points TMPDIR at a registered
// directory of the binary's own. FreePort and ReservePort pick loopback
// ports for children that no other test binary picks meanwhile.
package proctest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// envReaper, set to the binary's mark, makes a copy of the test binary
	// run as its reaper.
	envReaper = "PLANTSTORE_PROCTEST_REAPER"
	// envMark is the variable, set to the binary's mark, in the
	// environment of every child and of their descendants.
	envMark = "PLANTSTORE_PROCTEST_OWNER"
)

// reapTimeout bounds the reaper's work once the test binary is gone.
const reapTimeout = 30 * time.Second

func init() {
	if mark := os.Getenv(envReaper); mark != "" {
		os.Exit(reap(mark, os.Stdin))
	}
}

// state is the test binary's side: the pipe to the reaper and the starter
// goroutine.
var state struct {
	once sync.Once
	err  error
	mark string

	mu   sync.Mutex
	pipe *os.File // write end; a global, so that no finalizer closes it

	starts chan startRequest
}

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// setup starts the reaper and the starter goroutine, once.
func setup() error {
	state.once.Do(func() {
		b := make([]byte, 16)
		rand.Read(b)
		state.mark = hex.EncodeToString(b)
		exe, err := os.Executable()
		if err != nil {
			state.err = fmt.Errorf("proctest: the test binary: %w", err)
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			state.err = fmt.Errorf("proctest: %w", err)
			return
		}
		reaper := exec.Command(exe)
		reaper.Env = append(os.Environ(), envReaper+"="+state.mark)
		reaper.Stdin, reaper.Stderr = r, os.Stderr
		// No parent-death signal and the test binary's process group: the
		// reaper must outlive the binary, and it ignores the terminal's
		// SIGINT that ends the binary.
		err = reaper.Start()
		r.Close()
		if err != nil {
			w.Close()
			state.err = fmt.Errorf("proctest: start the reaper: %w", err)
			return
		}
		go reaper.Wait() // it exits after the binary, or earlier if it failed
		state.pipe = w
		state.starts = make(chan startRequest)
		go starter(state.starts)
	})
	return state.err
}

// starter starts every child, from a thread that never exits: a child's
// parent-death signal fires when the thread that forked it ends.
func starter(reqs <-chan startRequest) {
	runtime.LockOSThread() // never unlocked, so the thread lives as long as the process
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// tell sends one line to the reaper.
func tell(kind, arg string) error {
	if strings.ContainsAny(arg, "\n\x00") {
		return fmt.Errorf("proctest: %q: a path with a newline", arg)
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if _, err := fmt.Fprintf(state.pipe, "%s %s\n", kind, arg); err != nil {
		return fmt.Errorf("proctest: tell the reaper: %w", err)
	}
	return nil
}

// Start starts cmd as exec.Cmd.Start does, in a process group of its own
// (its pid is the group's id), with SIGKILL as its parent-death signal and
// the binary's mark in its environment, so that it and its descendants are
// killed when the test binary ends. The caller still stops it when its test
// ends, and waits for it (cmd.Wait).
func Start(cmd *exec.Cmd) error {
	if err := setup(); err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(slices.Clip(env), envMark+"="+state.mark)
	req := startRequest{cmd: cmd, done: make(chan error, 1)}
	state.starts <- req
	return <-req.done
}

// Run starts cmd with Start and waits for it.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// CombinedOutput runs cmd with Run and returns its standard output and
// standard error together, as exec.Cmd.CombinedOutput does.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b // one writer: exec.Cmd copies both into it from one goroutine
	err := Run(cmd)
	return b.Bytes(), err
}

// Output runs cmd with Run and returns its standard output, as
// exec.Cmd.Output does (without keeping standard error in the error).
func Output(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout = &b
	err := Run(cmd)
	return b.Bytes(), err
}

// MkdirTemp creates a directory as os.MkdirTemp does and registers it:
// the reaper kills the processes working in it and removes it when the
// test binary ends. The caller still removes it when its test ends.
func MkdirTemp(dir, pattern string) (string, error) {
	if err := setup(); err != nil {
		return "", err
	}
	path, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if err := Register(path); err != nil {
		os.RemoveAll(path)
		return "", err
	}
	return path, nil
}

// Register registers an existing directory as MkdirTemp does.
func Register(dir string) error {
	if err := setup(); err != nil {
		return err
	}
	abs, err := canonical(dir)
	if err != nil {
		return err
	}
	return tell("dir", abs)
}

// canonical returns the absolute path of dir with symbolic links resolved,
// as /proc shows working directories.
func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// Main starts the reaper, points TMPDIR at a registered directory of the
// binary's own (so that t.TempDir and the temporary files of the children
// are removed even after a panic) and runs m's tests, returning their exit
// code. It is for TestMain; pgtest.Run calls it.
func Main(m *testing.M) int {
	dir, err := MkdirTemp("", "plantstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Mode 1777, as /tmp's: children that run as another user (PostgreSQL
	// as postgres when the tests run as root) work in it too.
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("TMPDIR", dir)
	return m.Run()
}

// reap is the reaper: it reads the registered directories from r until
// the test binary is gone (end of file), then kills every process of the
// binary's and removes the directories. It returns the exit code.
func reap(mark string, r *os.File) int {
	// The terminal's SIGINT and a SIGTERM sent to the binary's process
	// group must not stop the cleanup that they cause.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	var dirs []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if dir, ok := strings.CutPrefix(sc.Text(), "dir "); ok {
			dirs = append(dirs, dir)
		}
	}
	killed := map[int]string{}
	deadline := time.Now().Add(reapTimeout)
	for {
		left := leftovers(mark, dirs)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "proctest: still running %v after %v: left behind\n", left, reapTimeout)
			return 1
		}
		for pid, what := range left {
			syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = what
		}
		time.Sleep(10 * time.Millisecond) // SIGKILL is not instant: look again
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	if len(killed) > 0 {
		var b strings.Builder
		for pid, what := range killed {
			fmt.Fprintf(&b, "\n\t%d %s", pid, what)
		}
		fmt.Fprintf(os.Stderr, "proctest: the test binary ended with %d processes of its own running; killed them and removed its temporary directories:%s\n", len(killed), b.String())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "proctest: %v\n", err)
		return 1
	}
	return 0
}

// leftovers returns the live processes (not zombies) that carry mark in
// their environment or work in one of dirs, with their command lines.
func leftovers(mark string, dirs []string) map[int]string {
	self := os.Getpid()
	want := []byte(envMark + "=" + mark + "\x00")
	entries, _ := os.ReadDir("/proc")
	found := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		proc := filepath.Join("/proc", e.Name())
		ours := false
		if env, err := os.ReadFile(filepath.Join(proc, "environ")); err == nil {
			ours = bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))
		}
		if !ours {
			if cwd, err := os.Readlink(filepath.Join(proc, "cwd")); err == nil {
				cwd = strings.TrimSuffix(cwd, " (deleted)")
				ours = slices.ContainsFunc(dirs, func(d string) bool {
					return cwd == d || strings.HasPrefix(cwd, d+"/")
				})
			}
		}
		if !ours {
			continue
		}
		// A zombie has no environment nor working directory to read, so it
		// is not found; its parent or init reaps it.
		cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		found[pid] = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return found
}
