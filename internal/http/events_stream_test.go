package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// sseFrame is one message or comment of an event stream, or how it ended.
type sseFrame struct {
	ID, Event, Data string
	Comment         string
	Retry           string
	Err             error // the stream ended (io.EOF: cleanly)
}

// sseStream reads an open event stream frame by frame.
type sseStream struct {
	Resp   *http.Response
	frames chan sseFrame
	cancel context.CancelFunc
}

// sseWait bounds every wait for a frame: past it the test fails instead of
// hanging (it is not a measure of anything).
const sseWait = 15 * time.Second

// openStream sends GET path (on the stream's route) with the token and the
// headers; it returns the answer, and the stream when the answer is 200.
// The stream is closed when the test ends.
func openStream(t *testing.T, ts *TestServer, token, path string, header map[string]string) (*Response, *sseStream) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
	}
	s := &sseStream{Resp: resp, frames: make(chan sseFrame, 1024), cancel: cancel}
	go s.read()
	t.Cleanup(s.Close)
	return &Response{Status: resp.StatusCode, Header: resp.Header}, s
}

// read parses the body into frames until it ends.
func (s *sseStream) read() {
	defer close(s.frames)
	sc := bufio.NewScanner(s.Resp.Body)
	var f sseFrame
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			f.Data = strings.Join(data, "\n")
			if f != (sseFrame{}) {
				s.frames <- f
			}
			f, data = sseFrame{}, nil
		case strings.HasPrefix(line, ":"):
			f.Comment = strings.TrimSpace(line[1:])
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				f.ID = value
			case "event":
				f.Event = value
			case "data":
				data = append(data, value)
			case "retry":
				f.Retry = value
			default:
				s.frames <- sseFrame{Err: fmt.Errorf("unexpected line %q", line)}
				return
			}
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	s.frames <- sseFrame{Err: err}
}

// Close ends the stream from the client's side.
func (s *sseStream) Close() {
	s.cancel()
	s.Resp.Body.Close()
}

// next returns the next frame, failing the test when none comes within
// sseWait.
func (s *sseStream) next(t *testing.T) sseFrame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			return sseFrame{Err: io.EOF}
		}
		return f
	case <-time.After(sseWait):
		t.Fatalf("no frame within %v", sseWait)
		return sseFrame{}
	}
}

// nextEvent returns the next event message, skipping heartbeats.
func (s *sseStream) nextEvent(t *testing.T) streamedEvent {
	t.Helper()
	for {
		f := s.next(t)
		if f.Err != nil {
			t.Fatalf("stream ended: %v", f.Err)
		}
		if f.Comment != "" && f.ID == "" && f.Data == "" {
			continue
		}
		var e streamedEvent
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			t.Fatalf("data %q: %v", f.Data, err)
		}
		if f.ID != fmt.Sprint(e.Seq) || f.Event != e.Type {
			t.Fatalf("frame id %q event %q, data %s: id must be the seq, event the type", f.ID, f.Event, f.Data)
		}
		return e
	}
}

// streamedEvent is an event's envelope as a stream carries it.
type streamedEvent struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// createPlants creates plants with these ids for the token's owner.
func createPlants(t *testing.T, ts *TestServer, token string, ids ...int) {
	t.Helper()
	for _, id := range ids {
		if resp := ts.Post(t, token, fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id)); resp.Status != 200 {
			t.Fatalf("create %d: %d %s", id, resp.Status, resp.Body)
		}
	}
}

// wantEvents reads events from s and checks their seqs and plant ids.
func wantEvents(t *testing.T, s *sseStream, owner string, seqs []int64, plantIDs []int) {
	t.Helper()
	for i, seq := range seqs {
		e := s.nextEvent(t)
		var p struct{ ID int }
		if err := json.Unmarshal(e.Data, &p); err != nil {
			t.Fatalf("event %d data %s: %v", e.Seq, e.Data, err)
		}
		if e.Seq != seq || p.ID != plantIDs[i] || !strings.HasPrefix(e.ID, "evt_") || e.CreatedAt.IsZero() {
			t.Fatalf("%s: event %d = %+v (data %s), want seq %d of plant %d", owner, i, e, e.Data, seq, plantIDs[i])
		}
	}
}

// TestEventStream_Resume: the stream starts after Last-Event-ID (which wins
// over after), else after after, else at the first event; then it sends new
// events as they are committed, each once, in seq order.
func TestEventStream_Resume(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	createPlants(t, ts, tok, 10, 11, 12)

	t.Run("FromTheStart", func(t *testing.T) {
		resp, s := openStream(t, ts, tok, "/events/stream", nil)
		if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
			t.Fatalf("Content-Type = %q", got)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Fatalf("Cache-Control = %q", got)
		}
		if got := resp.Header.Get("X-Accel-Buffering"); got != "no" {
			t.Fatalf("X-Accel-Buffering = %q", got)
		}
		wantEvents(t, s, "alice", []int64{1, 2, 3}, []int{10, 11, 12})
	})
	t.Run("LastEventID", func(t *testing.T) {
		_, s := openStream(t, ts, tok, "/events/stream?after=0", map[string]string{"Last-Event-ID": "1"})
		wantEvents(t, s, "alice", []int64{2, 3}, []int{11, 12})
	})
	t.Run("After", func(t *testing.T) {
		_, s := openStream(t, ts, tok, "/events/stream?after=2", nil)
		wantEvents(t, s, "alice", []int64{3}, []int{12})
	})
	t.Run("Live", func(t *testing.T) {
		_, s := openStream(t, ts, tok, "/events/stream", map[string]string{"Last-Event-ID": "3"})
		createPlants(t, ts, tok, 13)
		if resp := ts.Do(t, Request{Method: "PATCH", Path: "/plants/13", Token: tok, Body: `{"tag":"green"}`}); resp.Status != 200 {
			t.Fatalf("PATCH: %d %s", resp.Status, resp.Body)
		}
		if resp := ts.Do(t, Request{Method: "DELETE", Path: "/plants/13", Token: tok}); resp.Status != 204 {
			t.Fatalf("DELETE: %d %s", resp.Status, resp.Body)
		}
		for i, want := range []string{plantstore.EventPlantCreated, plantstore.EventPlantUpdated, plantstore.EventPlantDeleted} {
			e := s.nextEvent(t)
			if e.Seq != int64(4+i) || e.Type != want {
				t.Fatalf("event %d = seq %d %s, want seq %d %s", i, e.Seq, e.Type, 4+i, want)
			}
		}
	})
	t.Run("ManyPages", func(t *testing.T) {
		// More events than one read of the store: every one, in order.
		other := ts.Token(t, "carol")
		ids := make([]int, 250)
		seqs := make([]int64, 250)
		for i := range ids {
			ids[i], seqs[i] = 1000+i, int64(i+1)
		}
		createPlants(t, ts, other, ids...)
		_, s := openStream(t, ts, other, "/events/stream", nil)
		wantEvents(t, s, "carol", seqs, ids)
	})
}

// TestEventStream_OtherOwner: a stream carries only its token's owner's
// events, the seqs of each owner counted apart.
func TestEventStream_OtherOwner(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	alice, bob := ts.Token(t, "alice"), ts.Token(t, "bob")
	createPlants(t, ts, alice, 1, 2)
	_, bobs := openStream(t, ts, bob, "/events/stream", nil)
	_, alices := openStream(t, ts, alice, "/events/stream?after=2", nil)
	createPlants(t, ts, alice, 3)
	createPlants(t, ts, bob, 7)
	createPlants(t, ts, alice, 4)
	createPlants(t, ts, bob, 8)
	// Bob's first events are his own: alice's, committed between, never
	// come (they would come first).
	wantEvents(t, bobs, "bob", []int64{1, 2}, []int{7, 8})
	wantEvents(t, alices, "alice", []int64{3, 4}, []int{3, 4})
}

// TestEventStream_Heartbeat: an idle stream gets a comment line at each
// interval, and lives past the server's read and write timeouts (its write
// deadline is one per write, not the whole response's).
func TestEventStream_Heartbeat(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.EventStreamHeartbeat = 50 * time.Millisecond
		ts.ReadTimeout = 300 * time.Millisecond
		ts.WriteTimeout = 300 * time.Millisecond
	})
	tok := ts.Token(t, "alice")
	_, s := openStream(t, ts, tok, "/events/stream", nil)
	opened := time.Now()
	beats := 0
	for time.Since(opened) < time.Second { // past both timeouts, a few times over
		f := s.next(t)
		if f.Err != nil {
			t.Fatalf("stream ended after %d heartbeats: %v", beats, f.Err)
		}
		if f.Comment != "heartbeat" || f.ID != "" || f.Data != "" {
			t.Fatalf("frame %+v, want a heartbeat", f)
		}
		beats++
	}
	createPlants(t, ts, tok, 5)
	wantEvents(t, s, "alice", []int64{1}, []int{5})
}

// TestEventStream_Refused: the stream needs a token with the scope of GET
// /events; a malformed cursor is a 400; HEAD answers the headers at once.
func TestEventStream_Refused(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	scope := plantstorehttp.OperationScopes[oapi.StreamEventsOperation]
	var others []string
	for _, s := range plantstore.KnownScopes {
		if s != scope {
			others = append(others, s)
		}
	}
	t.Run("NoToken", func(t *testing.T) {
		resp, _ := openStream(t, ts, "", "/events/stream", nil)
		mustError(t, resp, 401, plantstore.CodeTokenMissing)
	})
	t.Run("Scope", func(t *testing.T) {
		resp, _ := openStream(t, ts, ts.Token(t, "alice", others...), "/events/stream", nil)
		mustError(t, resp, 403, plantstore.CodeInsufficientScope)
		if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `scope="`+scope+`"`) {
			t.Fatalf("WWW-Authenticate = %q", got)
		}
	})
	tok := ts.Token(t, "alice", scope)
	t.Run("LastEventID", func(t *testing.T) {
		for _, v := range []string{"x", "-1", "1.5", "9223372036854775808"} {
			resp, _ := openStream(t, ts, tok, "/events/stream", map[string]string{"Last-Event-ID": v})
			mustError(t, resp, 400, plantstore.CodeInvalidHeader)
		}
	})
	t.Run("After", func(t *testing.T) {
		for _, v := range []string{"x", "-1"} {
			resp, _ := openStream(t, ts, tok, "/events/stream?after="+v, nil)
			mustError(t, resp, 400, plantstore.CodeInvalidQuery)
		}
	})
	t.Run("Head", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "HEAD", Path: "/events/stream", Token: tok})
		mustHead(t, resp, 200)
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Fatalf("Cache-Control = %q", got)
		}
		mustHead(t, ts.Do(t, Request{Method: "HEAD", Path: "/events/stream", Token: ts.Token(t, "alice", others...)}), 403)
	})
}

// TestEventStream_Limits: a server holds EventStreamMax streams, an owner a
// quarter of them; past either, 429 42902; a closed stream frees its slot.
func TestEventStream_Limits(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) { ts.EventStreamMax = 8 }) // 2 per owner
	alice := ts.Token(t, "alice")
	_, first := openStream(t, ts, alice, "/events/stream", nil)
	openStream(t, ts, alice, "/events/stream", nil)
	resp, _ := openStream(t, ts, alice, "/events/stream", nil)
	mustError(t, resp, 429, plantstore.CodeTooManyStreams)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	for i := range 3 { // 6 streams open
		tok := ts.Token(t, fmt.Sprintf("owner%d", i))
		openStream(t, ts, tok, "/events/stream", nil)
		openStream(t, ts, tok, "/events/stream", nil)
	}
	resp, _ = openStream(t, ts, ts.Token(t, "dave"), "/events/stream", nil)
	mustError(t, resp, 429, plantstore.CodeTooManyStreams)

	// Alice closes one: its slot frees once the server sees it gone.
	first.Close()
	deadline := time.Now().Add(sseWait)
	for {
		resp, s := openStream(t, ts, alice, "/events/stream", nil)
		if s != nil {
			break
		}
		mustError(t, resp, 429, plantstore.CodeTooManyStreams)
		if time.Now().After(deadline) {
			t.Fatal("the closed stream's slot was never freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEventStream_Revoked: a stream whose token is revoked ends at the next
// heartbeat.
func TestEventStream_Revoked(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.EventStreamHeartbeat = 50 * time.Millisecond
		ts.Service.TokenCacheTTL = 0
	})
	tok, secret, err := ts.Services.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, s := openStream(t, ts, secret, "/events/stream", nil)
	if f := s.next(t); f.Comment != "heartbeat" {
		t.Fatalf("frame %+v, want a heartbeat", f)
	}
	if err := ts.Services.Tokens.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	for {
		f := s.next(t)
		if errors.Is(f.Err, io.EOF) {
			return
		}
		if f.Err != nil {
			t.Fatalf("stream failed: %v", f.Err)
		}
		if f.Comment != "heartbeat" {
			t.Fatalf("frame %+v, want a heartbeat or the end", f)
		}
	}
}

// TestEventStream_Shutdown: Close ends the open streams (cleanly, at a frame
// boundary) instead of waiting for them until its context ends.
func TestEventStream_Shutdown(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t) // the default heartbeat: nothing is sent while idle
	tok := ts.Token(t, "alice")
	createPlants(t, ts, tok, 1)
	_, s := openStream(t, ts, tok, "/events/stream", nil)
	wantEvents(t, s, "alice", []int64{1}, []int{1})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Close(ctx); err != nil {
		t.Fatalf("Close: %v (the stream kept it waiting)", err)
	}
	if f := s.next(t); !errors.Is(f.Err, io.EOF) {
		t.Fatalf("after Close: %+v, want the end of the stream", f)
	}
}
