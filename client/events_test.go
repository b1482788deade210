package client_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/client"
)

// plantChanges creates the n plants from, from+1, ...: one plant.created
// event each.
func plantChanges(t *testing.T, c *client.Client, from, n int64) {
	t.Helper()
	ctx := context.Background()
	for id := from; id < from+n; id++ {
		if _, err := c.CreatePlant(ctx, client.NewPlant{ID: id, Name: "Plant"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListEventsAndEvents(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	c := ts.client(t, ts.token(t, "alice"))
	plantChanges(t, c, 1, 5)
	name := "Renamed"
	if _, err := c.UpdatePlant(ctx, 1, client.PlantPatch{Name: &name}, client.UpdatePlantOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePlant(ctx, 2, client.DeletePlantOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another owner's events are not alice's.
	plantChanges(t, ts.client(t, ts.token(t, "bob")), 100, 2)

	page, err := c.ListEvents(ctx, client.ListEventsOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.Next == nil || page.Next.After != 2 || page.Next.Limit != 2 {
		t.Fatalf("first page of 2: %+v, next %+v", page.Events, page.Next)
	}
	var seqs []int64
	var types []string
	for ev, err := range c.Events(ctx, client.ListEventsOptions{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ev.ID, "evt_") || ev.CreatedAt.IsZero() {
			t.Errorf("event %+v", ev)
		}
		seqs = append(seqs, ev.Seq)
		types = append(types, ev.Type)
	}
	if got, want := seqs, []int64{1, 2, 3, 4, 5, 6, 7}; !equal(got, want) {
		t.Errorf("seqs = %v, want %v", got, want)
	}
	if got, want := types[5:], []string{"plant.updated", "plant.deleted"}; !equal(got, want) {
		t.Errorf("last types = %v, want %v", got, want)
	}
	deleted, err := c.ListEvents(ctx, client.ListEventsOptions{Type: "plant.deleted"})
	if err != nil || len(deleted.Events) != 1 || deleted.Events[0].Data.ID != 2 || deleted.Next != nil {
		t.Errorf("deleted events = %+v, %v", deleted, err)
	}
	after, err := c.ListEvents(ctx, client.ListEventsOptions{After: 6})
	if err != nil || len(after.Events) != 1 || after.Events[0].Seq != 7 {
		t.Errorf("after 6 = %+v, %v", after, err)
	}
	if _, err := c.ListEvents(ctx, client.ListEventsOptions{Type: "plant.watered"}); apiError(t, err).Status != 400 {
		t.Errorf("unknown type: %v, want a 400", err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cutProxy is a TCP proxy on 127.0.0.1 to target whose connections can be
// cut at once, as a network failure would.
type cutProxy struct {
	URL   string
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l := listen(t)
	p := &cutProxy{URL: "http://" + l.Addr().String()}
	addr := strings.TrimPrefix(target, "http://")
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() { l.Close(); p.cut() })
	return p
}

// cut closes every connection open through the proxy.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestTailEvents(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	id, token := ts.tokenWithID(t, "alice")
	c := ts.client(t, token)
	proxy := newCutProxy(t, ts.URL)
	viaProxy, err := client.New(proxy.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	plantChanges(t, c, 1, 3)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reconnects := make(chan int64, 10)
	next, stop := iter.Pull2(viaProxy.TailEvents(ctx, 1, client.TailOptions{
		OnReconnect: func(after int64, err error) { reconnects <- after },
	}))
	defer stop()
	want := int64(2) // after 1: from seq 2
	read := func(n int) {
		t.Helper()
		for range n {
			ev, err, ok := next()
			if !ok || err != nil {
				t.Fatalf("event %d: %v, %v", want, err, ok)
			}
			if ev.Seq != want || ev.Data.ID != want {
				t.Fatalf("event %+v, want seq %d (plant %d)", ev, want, want)
			}
			want++
		}
	}
	read(2)
	// Events committed while the stream is open, then a cut connection:
	// the stream resumes after the last seq read, none twice, none missed.
	plantChanges(t, c, 4, 2)
	read(1)
	proxy.cut()
	plantChanges(t, c, 6, 2)
	read(3)
	select {
	case after := <-reconnects:
		// 4 was read before the cut; 5 may have arrived before it too.
		if after != 4 && after != 5 {
			t.Errorf("reconnected after %d, want the last seq yielded (4 or 5)", after)
		}
	default:
		t.Error("no reconnection reported")
	}

	// Ctrl-C: the iteration yields the context's error and ends.
	cancel()
	if _, err, ok := next(); !ok || !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, %v; want context.Canceled", err, ok)
	}
	if _, _, ok := next(); ok {
		t.Error("the iteration goes on after the cancel")
	}

	// A revoked token is not retried: the 401 ends the iteration.
	ts.revoke(t, id)
	n := 0
	for _, err := range c.TailEvents(context.Background(), 0, client.TailOptions{}) {
		n++
		if apiError(t, err).Status != 401 {
			t.Errorf("tail with a revoked token: %v, want a 401", err)
		}
	}
	if n != 1 {
		t.Errorf("tail with a revoked token yielded %d times, want once (the 401)", n)
	}
}
