package http_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// logLines returns the server's JSON log lines with message msg.
func logLines(t *testing.T, ts *TestServer, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(ts.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

var generatedIDRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestRequestID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		sent   string // X-Request-Id sent; "" sends none
		echoed bool   // whether the answer echoes it, else a generated id
	}{
		{"Generated", "", false},
		{"Accepted", "req-42_abc.DEF:/+=", true},
		{"Max128", strings.Repeat("a", 128), true},
		{"ErrTooLong", strings.Repeat("a", 129), false},
		{"ErrSpace", "has space", false},
		{"ErrNonASCII", "plänt", false},
		{"ErrControl", "a\tb", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := MustOpenServer(t)
			tok := ts.Token(t, "alice")
			resp := ts.Do(t, Request{Method: "GET", Path: "/plants", Token: tok, Header: map[string]string{"X-Request-Id": tt.sent}})
			if resp.Status != 200 {
				t.Fatalf("status %d: %s", resp.Status, resp.Body)
			}
			id := resp.Header.Get("X-Request-Id")
			if tt.echoed {
				if got, want := id, tt.sent; got != want {
					t.Fatalf("X-Request-Id = %q, want %q", got, want)
				}
			} else if !generatedIDRE.MatchString(id) {
				t.Fatalf("X-Request-Id = %q, want 16 generated hex digits", id)
			}
			lines := logLines(t, ts, "request")
			if len(lines) != 1 {
				t.Fatalf("%d request log lines, want 1:\n%s", len(lines), ts.logs)
			}
			if got, want := lines[0]["request_id"], id; got != want {
				t.Fatalf("request log request_id = %v, want %q", got, want)
			}
			if got, want := lines[0]["owner"], "alice"; got != want {
				t.Fatalf("request log owner = %v, want %q", got, want)
			}
		})
	}

	t.Run("Unique", func(t *testing.T) {
		ts := MustOpenServer(t)
		seen := map[string]bool{}
		for range 20 {
			id := ts.Get(t, "", "/healthz").Header.Get("X-Request-Id")
			if seen[id] || !generatedIDRE.MatchString(id) {
				t.Fatalf("X-Request-Id %q repeated or malformed", id)
			}
			seen[id] = true
		}
	})

	// Errors (even 404s of unknown routes and 401s) carry the id, and the
	// error log line of a 500 has it too.
	t.Run("OnErrors", func(t *testing.T) {
		var fail failures
		ts := MustOpenServer(t, withFailingServices(&fail, errors.New("sqlite: find plant: no such table: plants"), nil))
		tok := ts.Token(t, "alice")
		if got := ts.Do(t, Request{Method: "GET", Path: "/nope", Header: map[string]string{"X-Request-Id": "r404"}}).Header.Get("X-Request-Id"); got != "r404" {
			t.Fatalf("404: X-Request-Id = %q", got)
		}
		if got := ts.Do(t, Request{Method: "GET", Path: "/plants", Header: map[string]string{"X-Request-Id": "r401"}}).Header.Get("X-Request-Id"); got != "r401" {
			t.Fatalf("401: X-Request-Id = %q", got)
		}
		fail.plants.Store(true)
		resp := ts.Do(t, Request{Method: "GET", Path: "/plants/1", Token: tok, Header: map[string]string{"X-Request-Id": "r500"}})
		mustError(t, resp, 500, 50001)
		if got := resp.Header.Get("X-Request-Id"); got != "r500" {
			t.Fatalf("500: X-Request-Id = %q", got)
		}
		var found bool
		for _, msg := range []string{"internal error", "storage error"} {
			for _, l := range logLines(t, ts, msg) {
				if l["request_id"] == "r500" {
					found = true
				}
			}
		}
		if !found {
			t.Fatalf("no error log line with request_id r500:\n%s", ts.logs)
		}
	})
}
