package http_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestRefusal_UnreadBody: a request refused before its body is read gets
// its answer at once, with Connection: close, although the client has sent
// 1 byte of the 100 its Content-Length announces. Without Connection: close
// net/http reads the rest of the body before it writes the answer: nothing
// comes until the server's ReadTimeout (30 s here), far past the client's
// deadline. A request whose body was read whole keeps its connection.
func TestRefusal_UnreadBody(t *testing.T) {
	t.Parallel()
	const readTimeout = 30 * time.Second
	ts := MustOpenServer(t, func(s *TestServer) {
		s.ReadTimeout = readTimeout
		s.RateLimit, s.RateBurst = 1e-6, 1 // one request per owner
	})
	// Each case has an owner of its own: the rate limit is the owner's.
	reader := func(t *testing.T, owner string) string { return ts.Token(t, owner, plantstore.ScopePlantsRead) }
	writer := func(t *testing.T, owner string) string { return ts.Token(t, owner) }
	spent := func(t *testing.T, owner string) string {
		tok := writer(t, owner)
		if resp := ts.Get(t, tok, "/me"); resp.Status != http.StatusOK {
			t.Fatalf("GET /me: %d %s", resp.Status, resp.Body)
		}
		return tok
	}
	const full = `{"id":1,"name":"Fern"`
	for _, tt := range []struct {
		name         string
		method, path string
		token        func(t *testing.T, owner string) string // nil: no Authorization
		ctype        string
		length       int    // Content-Length
		body         string // what is sent of it
		status       int
		code         int32
		close        bool
	}{
		{name: "401", method: "POST", path: "/plants", status: 401, code: plantstore.CodeTokenMissing, close: true},
		{name: "403", method: "POST", path: "/plants", token: reader, status: 403, code: plantstore.CodeInsufficientScope, close: true},
		{name: "404", method: "POST", path: "/nowhere", status: 404, code: plantstore.CodeNoRoute, close: true},
		{name: "405", method: "PUT", path: "/plants", token: writer, status: 405, code: plantstore.CodeMethodNotAllowed, close: true},
		{name: "405Ops", method: "POST", path: "/healthz", status: 405, code: plantstore.CodeMethodNotAllowed, close: true},
		{name: "413", method: "POST", path: "/plants", token: writer, length: plantstore.MaxBodyBytes + 1, status: 413, code: plantstore.CodeBodyTooLarge, close: true},
		{name: "415", method: "POST", path: "/plants", token: writer, ctype: "text/plain", status: 415, code: plantstore.CodeUnsupportedMedia, close: true},
		{name: "429", method: "POST", path: "/plants", token: spent, status: 429, code: plantstore.CodeRateLimited, close: true},
		// The body read whole: the connection is kept.
		{name: "400Read", method: "POST", path: "/plants", token: writer, length: len(full), body: full, status: 400, code: plantstore.CodeMalformedJSON},
	} {
		owner := "owner-" + strings.ToLower(tt.name)
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			length, body, ctype := tt.length, tt.body, tt.ctype
			if length == 0 {
				length, body = 100, "{"
			}
			if ctype == "" {
				ctype = "application/json"
			}
			var head strings.Builder
			fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: plantstore\r\nContent-Type: %s\r\nContent-Length: %d\r\n", tt.method, tt.path, ctype, length)
			if tt.token != nil {
				fmt.Fprintf(&head, "Authorization: Bearer %s\r\n", tt.token(t, owner))
			}
			head.WriteString("\r\n")
			conn := ts.dial(t)
			// A bound on a failure (an answer held until the server's
			// ReadTimeout), not a measure of speed.
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(conn, head.String()+body); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer within 5 s (server ReadTimeout %v): %v", readTimeout, err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			mustError(t, &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, tt.status, tt.code)
			if resp.Close != tt.close { // Connection: close
				t.Fatalf("Connection: close is %v, want %v", resp.Close, tt.close)
			}
			if tt.close {
				// The server then closes the connection, without waiting
				// for the rest of the body until its ReadTimeout.
				if n, err := br.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("after the answer: read %d, %v; want EOF", n, err)
				}
			}
		})
	}
}
