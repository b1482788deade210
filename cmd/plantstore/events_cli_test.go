package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// switchProxy is a TCP proxy on 127.0.0.1 that forwards each new
// connection to the current target, so that a client keeps one --server
// across a server restarted on another port.
type switchProxy struct {
	addr   string
	mu     sync.Mutex
	target string // host:port
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{addr: l.Addr().String()}
	p.point(target)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// point sends the next connections to the server at url.
func (p *switchProxy) point(url string) {
	p.mu.Lock()
	p.target = strings.TrimPrefix(url, "http://")
	p.mu.Unlock()
}

// TestEventsCLI: events list (a page, --all, --type, table), and events
// tail across a server killed with SIGKILL and restarted: every event once,
// in order; Ctrl-C ends it with 130.
func TestEventsCLI(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--event-stream-heartbeat", "1s")
	token := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "alice", "--db", db))
	run := func(args ...string) binaryRun { return runClient(t, s.url, token, args...) }
	for _, id := range []string{"1", "2", "3"} {
		run("plants", "create", id, "Fern").ok(t)
	}
	run("plants", "delete", "2").ok(t)

	var events []client.Event
	r := run("events", "list", "--limit", "2").ok(t)
	r.decode(t, &events)
	if len(events) != 2 || events[0].Seq != 1 || events[1].Seq != 2 || !strings.Contains(r.stderr, "--after 2") {
		t.Errorf("events list --limit 2 = %s, stderr %q", r.stdout, r.stderr)
	}
	run("events", "list", "--all", "--limit", "1").ok(t).decode(t, &events)
	if len(events) != 4 || events[3].Type != "plant.deleted" || events[3].Data.ID != 2 {
		t.Errorf("events list --all = %+v", events)
	}
	run("events", "list", "--type", "plant.deleted").ok(t).decode(t, &events)
	if len(events) != 1 || events[0].Seq != 4 {
		t.Errorf("events list --type plant.deleted = %+v", events)
	}
	r = run("events", "list", "--after", "3", "--format", "table").ok(t)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "SEQ ") || !strings.HasPrefix(lines[1], "4 ") || !strings.Contains(lines[1], "plant.deleted") {
		t.Errorf("events list --format table =\n%s", r.stdout)
	}
	if r := run("events", "list", "--type", "plant.watered"); r.code != 2 {
		t.Errorf("events list --type plant.watered: exit %d, want 2 (usage)", r.code)
	}

	// tail, through a proxy so that --server stays while the server moves.
	proxy := newSwitchProxy(t, s.url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "events", "tail", "--after", "1")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"PLANTSTORE_SERVER=" + proxy.addr, "PLANTSTORE_TOKEN=" + token}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	want := int64(2)
	read := func(n int) {
		t.Helper()
		for range n {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("tail ended before seq %d", want)
				}
				var ev client.Event
				if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Seq != want {
					t.Fatalf("tail line %q (%v), want seq %d", line, err, want)
				}
				want++
			case <-ctx.Done():
				t.Fatalf("no seq %d from tail", want)
			}
		}
	}
	read(3) // 2, 3, 4
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.done
	s = startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--event-stream-heartbeat", "1s")
	proxy.point(s.url)
	for _, id := range []string{"5", "6"} {
		runClient(t, s.url, token, "plants", "create", id, "Ivy").ok(t)
	}
	read(2) // 5, 6: none lost, none twice
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		t.Errorf("tail printed %q after the last event", line)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("tail after SIGINT: %v, exit %d, want 130; stderr:\n%s", err, code, stderr)
	}
	if !strings.Contains(stderr.String(), "reconnecting after seq 4") {
		t.Errorf("tail stderr %q: want the reconnection after seq 4", stderr)
	}
}
