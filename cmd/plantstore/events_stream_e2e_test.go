package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// sseEvent is one event message of GET /events/stream.
type sseEvent struct {
	Seq     int64
	Type    string
	PlantID int64
}

// sseClient is one connection to GET /events/stream, read in the
// background until it ends.
type sseClient struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the stream has ended

	mu     sync.Mutex
	events []sseEvent
	err    error // why it ended
}

// streamClient has no overall timeout (a stream lasts); the header must come
// within 10 s.
var streamClient = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 10 * time.Second}}

// openEventStream opens GET /events/stream on s with the token, resuming
// after lastID when it is not negative (Last-Event-ID), and reads it in the
// background. It fails the test unless the answer is 200.
func openEventStream(t *testing.T, s *server, token string, lastID int64) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/events/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	res, err := streamClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s/events/stream: %v", s.url, err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		res.Body.Close()
		t.Fatalf("GET %s/events/stream: %d %s", s.url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	c := &sseClient{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer res.Body.Close()
		c.finish(c.read(bufio.NewScanner(res.Body)))
	}()
	t.Cleanup(c.close)
	return c
}

// read parses messages until the body ends; a message that is not what the
// contract says ends it with an error.
func (c *sseClient) read(sc *bufio.Scanner) error {
	var id, event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && data != "":
			var env struct {
				Type string
				Seq  int64
				Data struct{ ID int64 }
			}
			if err := json.Unmarshal([]byte(data), &env); err != nil {
				return fmt.Errorf("data %q: %v", data, err)
			}
			if id != strconv.FormatInt(env.Seq, 10) || event != env.Type {
				return fmt.Errorf("message id %q event %q with data %s", id, event, data)
			}
			c.mu.Lock()
			c.events = append(c.events, sseEvent{Seq: env.Seq, Type: env.Type, PlantID: env.Data.ID})
			c.mu.Unlock()
			id, event, data = "", "", ""
		case line == "" || strings.HasPrefix(line, ":") || strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
	return sc.Err()
}

func (c *sseClient) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// close disconnects and waits for the reader.
func (c *sseClient) close() {
	c.cancel()
	<-c.done
}

// got returns the events received so far.
func (c *sseClient) got() []sseEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sseEvent(nil), c.events...)
}

// last returns the seq of the last event received, or 0.
func (c *sseClient) last() int64 {
	got := c.got()
	if len(got) == 0 {
		return 0
	}
	return got[len(got)-1].Seq
}

// creator creates plants 1, 2, ... one at a time on the server the target
// function names, until stopped, and remembers which were acknowledged.
type creator struct {
	token  string
	target func() *server
	client *http.Client

	mu    sync.Mutex
	acked []int64
	next  int64

	stop chan struct{}
	done chan struct{}
}

func startCreator(token string, target func() *server) *creator {
	c := &creator{token: token, target: target, client: &http.Client{Timeout: 10 * time.Second}, next: 1}
	c.run()
	return c
}

// run starts the creating loop (again after halt).
func (c *creator) run() {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			c.mu.Lock()
			id := c.next
			c.next++
			c.mu.Unlock()
			r := send(c.client, "POST", c.target().url+"/plants", c.token, fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id))
			if r.err == nil && r.status == http.StatusOK {
				c.mu.Lock()
				c.acked = append(c.acked, id)
				c.mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond) // a steady trickle, not a load test
		}
	}()
}

// halt stops the creator and waits for its request in flight.
func (c *creator) halt() {
	close(c.stop)
	<-c.done
}

func (c *creator) ackedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked)
}

// checkExactlyOnce checks the events a client received over its
// connections, in the order received: seqs 1, 2, 3, ... with no gap and
// none twice, each a plant.created, and among them the create of every plant
// in acked.
func checkExactlyOnce(t *testing.T, received []sseEvent, acked []int64) {
	t.Helper()
	for i, e := range received {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d received has seq %d, want %d (every event once, in order); around it: %v",
				i, e.Seq, i+1, received[max(0, i-3):min(len(received), i+3)])
		}
		if e.Type != "plant.created" {
			t.Fatalf("event %d: type %q, want plant.created", e.Seq, e.Type)
		}
	}
	created := make(map[int64]bool, len(received))
	for _, e := range received {
		created[e.PlantID] = true
	}
	for _, id := range acked {
		if !created[id] {
			t.Fatalf("plant %d was acknowledged but its event never came (%d events received)", id, len(received))
		}
	}
}

// TestEventStreamKill9: a client reads the stream while plants are created;
// the server is killed with SIGKILL (the client is cut off mid-stream, the
// creates in flight too), restarted on the same file, more plants are
// created, and the client reconnects with Last-Event-ID: over both
// connections it gets every event exactly once, in order, among them every
// acknowledged create's.
func TestEventStreamKill9(t *testing.T) {
	t.Parallel()
	const secret = "event-stream-kill9-token-0123456789abcdef"
	db := tempDBPath(t)
	s := startServer(t, db, "--bootstrap-token", secret, "--rate-limit", "0")
	stream := openEventStream(t, s, secret, -1)
	var current sync.Mutex
	target := s
	w := startCreator(secret, func() *server { current.Lock(); defer current.Unlock(); return target })

	waitFor(t, 20*time.Second, "40 creates and 20 events streamed", func() bool {
		return w.ackedCount() >= 40 && len(stream.got()) >= 20
	})
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.done
	select {
	case <-stream.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when its server was killed")
	}
	w.halt()
	before := stream.got()
	t.Logf("before SIGKILL: %d creates acknowledged, %d events streamed", len(w.acked), len(before))

	s = startServer(t, db, "--rate-limit", "0")
	current.Lock()
	target = s
	current.Unlock()
	resumed := openEventStream(t, s, secret, stream.last())
	w.run()
	waitFor(t, 20*time.Second, "20 more creates", func() bool { return w.ackedCount() >= len(before)+20 })
	w.halt()
	lastID := w.acked[len(w.acked)-1]
	waitFor(t, 20*time.Second, fmt.Sprintf("the event of plant %d", lastID), func() bool {
		got := resumed.got()
		return len(got) > 0 && got[len(got)-1].PlantID >= lastID
	})
	checkExactlyOnce(t, append(before, resumed.got()...), w.acked)
}

// TestEventStreamReplicas: two replicas on one PostgreSQL database; plants
// are created on replica A while a client streams from replica B (whose
// stream sees A's commits by polling), then the client disconnects
// mid-stream and reconnects to A with Last-Event-ID while the creates move
// to B: every event exactly once, in order.
func TestEventStreamReplicas(t *testing.T) {
	t.Parallel()
	const secret = "event-stream-replicas-token-0123456789abcdef"
	db := pgtest.NewDatabase(t)
	args := []string{"--bootstrap-token", secret, "--rate-limit", "0", "--event-stream-poll", "100ms"}
	a := launchServer(t, "replica A", db, args...)
	b := launchServer(t, "replica B", db, args...)
	a.waitReady(t)
	b.waitReady(t)

	var current sync.Mutex
	target := a
	w := startCreator(secret, func() *server { current.Lock(); defer current.Unlock(); return target })
	onB := openEventStream(t, b, secret, -1)
	waitFor(t, 20*time.Second, "30 events streamed from B", func() bool { return len(onB.got()) >= 30 })
	onB.close() // the client goes, mid-stream
	before := onB.got()

	current.Lock()
	target = b
	current.Unlock()
	onA := openEventStream(t, a, secret, onB.last())
	n := w.ackedCount()
	waitFor(t, 20*time.Second, "30 more creates on B", func() bool { return w.ackedCount() >= n+30 })
	w.halt()
	lastID := w.acked[len(w.acked)-1]
	waitFor(t, 20*time.Second, fmt.Sprintf("the event of plant %d from A", lastID), func() bool {
		got := onA.got()
		return len(got) > 0 && got[len(got)-1].PlantID >= lastID
	})
	checkExactlyOnce(t, append(before, onA.got()...), w.acked)
}

// TestEventStreamSIGTERM: SIGTERM ends the open streams at once (the
// clients see their stream end and reconnect elsewhere) instead of holding
// the shutdown for --shutdown-timeout; the process exits 0.
func TestEventStreamSIGTERM(t *testing.T) {
	t.Parallel()
	const secret = "event-stream-sigterm-token-0123456789abcdef"
	s := startServer(t, tempDBPath(t), "--bootstrap-token", secret, "--shutdown-timeout", "60s")
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", secret, `{"id":1,"name":"Fern"}`); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	streams := []*sseClient{openEventStream(t, s, secret, -1), openEventStream(t, s, secret, 0)}
	for _, c := range streams {
		waitFor(t, 10*time.Second, "the first event", func() bool { return len(c.got()) == 1 })
	}
	// stop fails the test unless the process exits within 10 s, far less
	// than the grace the streams would otherwise hold it for.
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\nstderr:\n%s", err, s.stderr)
	}
	for i, c := range streams {
		<-c.done
		if c.err != nil {
			t.Errorf("stream %d ended with %v, want a clean end", i, c.err)
		}
	}
}
