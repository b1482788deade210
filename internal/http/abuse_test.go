package http_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// The abuse tests attack a real server over TCP on 127.0.0.1. Each fails
// when the protection it names is removed (checked by hand: the timeout
// set to zero, the cap lifted, the limiter off). The ones that count the
// process's goroutines, memory or allocations, and the rate limit's
// promptness check, are not parallel: Go runs them before any parallel
// test starts, so nothing else moves their measurements.

// dial opens a raw TCP connection to the test server.
func (ts *TestServer) dial(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedAfter reads conn until the server closes it (or it fails) and
// sends on the channel how long after start that was and what was read.
func closedAfter(conn net.Conn, start time.Time) <-chan string {
	done := make(chan string, 1)
	go func() {
		data, _ := io.ReadAll(conn)
		done <- fmt.Sprintf("%v|%s", time.Since(start), data)
	}()
	return done
}

func splitClosed(s string) (time.Duration, string) {
	d, rest, _ := strings.Cut(s, "|")
	took, _ := time.ParseDuration(d)
	return took, rest
}

// TestAbuse_Slowloris: a client dribbling its request headers one byte
// every 500 ms is cut off after ReadHeaderTimeout. Without the timeout
// (ReadHeaderTimeout and ReadTimeout zero) the connection stays open and
// the test fails after 4 s.
func TestAbuse_Slowloris(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	ts := MustOpenServer(t, func(s *TestServer) { s.ReadHeaderTimeout = timeout })
	conn := ts.dial(t)
	start := time.Now()
	done := closedAfter(conn, start)
	header := "GET /plants HTTP/1.1\r\nHost: plantstore\r\nX-Slow: " + strings.Repeat("a", 64) + "\r\n\r\n"
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case s := <-done:
			took, answer := splitClosed(s)
			if took < timeout-100*time.Millisecond || took > timeout+2*time.Second {
				t.Fatalf("closed after %v, want about %v", took, timeout)
			}
			// Go answers a timed-out request line with a 400, or nothing.
			if i >= len(header) || (answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 400 ")) {
				t.Fatalf("after %d of %d bytes the server answered %q", i, len(header), answer)
			}
			t.Logf("closed after %v and %d of %d header bytes", took, i, len(header))
			return
		case <-tick.C:
		}
		if time.Since(start) > 4*timeout {
			t.Fatalf("connection still open %v after the first header byte (ReadHeaderTimeout %v)", time.Since(start), timeout)
		}
		if i < len(header) {
			conn.Write([]byte{header[i]}) // fails once the server closed: the reader reports it
		}
	}
}

// TestAbuse_SlowBody: a client that sends its headers at once and then
// dribbles the body is cut off by ReadTimeout; nothing is stored. Without
// ReadTimeout the body keeps flowing and the test fails after 4 s.
func TestAbuse_SlowBody(t *testing.T) {
	t.Parallel()
	const timeout = 1500 * time.Millisecond
	ts := MustOpenServer(t, func(s *TestServer) { s.ReadTimeout = timeout })
	tok := ts.Token(t, "alice")
	body := `{"id":1,"name":"Slow","pad":"` + strings.Repeat("x", 100) + `"}`
	conn := ts.dial(t)
	start := time.Now()
	fmt.Fprintf(conn, "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tok, len(body))
	done := closedAfter(conn, start)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case s := <-done:
			took, answer := splitClosed(s)
			if took < timeout-100*time.Millisecond || took > timeout+2*time.Second {
				t.Fatalf("closed after %v, want about %v", took, timeout)
			}
			if i >= len(body) {
				t.Fatalf("the whole body got through")
			}
			if answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 400 ") {
				t.Fatalf("answer %q, want none or a 400", answer)
			}
			if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 0 {
				t.Fatalf("stored %v", got)
			}
			t.Logf("closed after %v and %d of %d body bytes", took, i, len(body))
			return
		case <-tick.C:
		}
		if time.Since(start) > 4*timeout {
			t.Fatalf("connection still open %v into a dribbled body (ReadTimeout %v)", time.Since(start), timeout)
		}
		if i < len(body) {
			conn.Write([]byte{body[i]})
		}
	}
}

// maxIdleConns caps how many idle connections TestAbuse_IdleConnections
// opens; fewer when the file-descriptor limit is lower (each connection
// costs two descriptors here: the client's and the server's end).
const maxIdleConns = 2000

// idleConnBytes is the documented bound on the memory one idle keep-alive
// connection costs (server and client ends in this process: heap and
// goroutine stacks). Measured about 12 KiB with Go 1.26 on linux/amd64.
const idleConnBytes = 20 << 10

// idleConns opens n connections, sends one request on each as soon as it
// is open (so no header timeout runs out under load) and reads the
// answers, leaving the connections idle (keep-alive) on the server.
func idleConns(t *testing.T, ts *TestServer, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = ts.dial(t)
		if _, err := io.WriteString(conns[i], "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for _, c := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// The answer sits in the socket buffer even if the server
			// has closed the connection since.
			resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Close {
				errs <- fmt.Errorf("status %d, close %v", resp.StatusCode, resp.Close)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return conns
}

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// TestAbuse_IdleConnections holds as many idle keep-alive connections as
// the descriptor limit allows (at most 2000): a new client is still served
// at once, and each idle connection costs at most idleConnBytes and one
// goroutine; all are released when the connections close.
func TestAbuse_IdleConnections(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n := min(maxIdleConns, (int(lim.Cur)-256)/2)
	if n < 100 {
		skipUnlessCI(t, fmt.Sprintf("descriptor limit %d too low", lim.Cur))
	}
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	ts.Get(t, tok, "/plants") // warm up the server's pools
	http.DefaultClient.CloseIdleConnections()

	goroutines, mem := runtime.NumGoroutine(), memInUse()
	conns := idleConns(t, ts, n)
	extraG := runtime.NumGoroutine() - goroutines
	extraMem := int64(memInUse()) - int64(mem)
	perConn := extraMem / int64(n)
	t.Logf("%d idle connections (fd limit %d): +%d goroutines, +%d KiB (%d B per connection)", n, lim.Cur, extraG, extraMem>>10, perConn)
	if extraG > n+20 {
		t.Errorf("%d goroutines for %d idle connections, want at most one each", extraG, n)
	}
	bound := int64(idleConnBytes)
	if raceEnabled {
		bound *= 3
	}
	if perConn > bound {
		t.Errorf("%d bytes per idle connection, want at most %d", perConn, bound)
	}

	t.Run("NewClientServed", func(t *testing.T) {
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for _, path := range []string{"/healthz", "/plants"} {
			start := time.Now()
			req, _ := http.NewRequest("GET", ts.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("GET %s with %d idle connections open: %v", path, n, err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || time.Since(start) > time.Second {
				t.Fatalf("GET %s: %d after %v", path, resp.StatusCode, time.Since(start))
			}
		}
	})

	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines+10 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 5 s after closing the connections, %d before opening them", runtime.NumGoroutine(), goroutines)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAbuse_IdleTimeout: keep-alive connections idle past IdleTimeout, and
// connections that never send a request past ReadHeaderTimeout, are closed
// by the server. Without the timeouts they stay open and the test fails.
func TestAbuse_IdleTimeout(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	ts := MustOpenServer(t, func(s *TestServer) {
		s.IdleTimeout, s.ReadHeaderTimeout = timeout, timeout
	})
	start := time.Now()
	used := idleConns(t, ts, 100)
	var silent []net.Conn
	for range 100 {
		silent = append(silent, ts.dial(t))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []string
	for i, c := range append(used, silent...) {
		wg.Go(func() {
			c.SetReadDeadline(start.Add(timeout + 3*time.Second))
			_, err := c.Read(make([]byte, 1))
			if err != io.EOF {
				mu.Lock()
				open = append(open, fmt.Sprintf("conn %d: %v", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(open) > 0 {
		t.Fatalf("%d of 200 connections not closed by the server within %v: %s", len(open), timeout+3*time.Second, open[0])
	}
	t.Logf("all 200 closed after %v", time.Since(start))
}

// TestAbuse_HugeHeaders: headers over MaxHeaderBytes (16 KiB) get 431;
// without the cap (Go's default is 1 MiB) they would be served.
func TestAbuse_HugeHeaders(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	for _, tt := range []struct {
		size   int
		status int
	}{
		{8 << 10, 200},
		{32 << 10, 431},
		{256 << 10, 431},
	} {
		t.Run(strconv.Itoa(tt.size), func(t *testing.T) {
			conn := ts.dial(t)
			// Write in the background: the server answers and closes
			// before reading all of a huge header.
			go fmt.Fprintf(conn, "GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\nX-Big: %s\r\n\r\n", tok, strings.Repeat("a", tt.size))
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("%d-byte header: status %d, want %d", tt.size, resp.StatusCode, tt.status)
			}
		})
	}
}

// allocated returns the bytes allocated by the whole process so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestAbuse_DeepJSON: bodies nested tens of thousands deep (as deep as
// 64 KiB allows) get 400 40001, with no stack overflow and little
// allocation. The protection is the body check (json.Valid's depth limit)
// before the generated decoder.
func TestAbuse_DeepJSON(t *testing.T) {
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	prefix, suffix := `{"id":1,"name":"Deep","x":`, `}`
	depth := (plantstore.MaxBodyBytes - len(prefix) - len(suffix)) / 2
	nested := prefix + strings.Repeat("[", depth) + strings.Repeat("]", depth) + suffix
	objects := prefix + strings.Repeat(`{"a":`, (plantstore.MaxBodyBytes-len(prefix)-len(suffix))/6) + `1` +
		strings.Repeat("}", (plantstore.MaxBodyBytes-len(prefix)-len(suffix))/6) + suffix
	for name, body := range map[string]string{
		"NestedArrays":  nested,
		"NestedObjects": objects[:min(len(objects), plantstore.MaxBodyBytes)],
		"Unclosed":      strings.Repeat("[", plantstore.MaxBodyBytes),
	} {
		t.Run(name, func(t *testing.T) {
			if len(body) > plantstore.MaxBodyBytes {
				t.Fatalf("body of %d bytes", len(body))
			}
			before := allocated()
			mustError(t, ts.Post(t, tok, body), 400, plantstore.CodeMalformedJSON)
			if grew := allocated() - before; grew > 4<<20 {
				t.Errorf("one %d-byte request allocated %d KiB", len(body), grew>>10)
			}
		})
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 0 {
		t.Fatalf("stored %v", got)
	}
}

// repeatReader yields n bytes of a JSON string's content without
// allocating them.
type repeatReader struct{ n int }

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// TestAbuse_HugeJSON: an 8 MiB body sent chunked (no Content-Length, so
// only reading can tell its size) gets 413 41301 after at most 64 KiB are
// read, with little allocation. Without the cap the server reads it all.
func TestAbuse_HugeJSON(t *testing.T) {
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	const size = 8 << 20
	before := allocated()
	body := io.MultiReader(strings.NewReader(`{"id":1,"name":"Huge","pad":"`), &repeatReader{size}, strings.NewReader(`"}`))
	req, err := http.NewRequest("POST", ts.URL+"/plants", io.NopCloser(body)) // not a known length: chunked
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	if req.ContentLength != 0 {
		t.Fatalf("ContentLength %d: the body would not be chunked", req.ContentLength)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mustError(t, &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, 413, plantstore.CodeBodyTooLarge)
	if grew := allocated() - before; grew > 4<<20 {
		t.Errorf("an %d MiB body allocated %d KiB", size>>20, grew>>10)
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 0 {
		t.Fatalf("stored %v", got)
	}
}

// TestAbuse_RateLimitBurst: a burst of concurrent requests over a token's
// rate limit gets 429 42901 with Retry-After, while another token is
// served promptly throughout. Without the limiter every request is served.
func TestAbuse_RateLimitBurst(t *testing.T) {
	ts := MustOpenServer(t, func(s *TestServer) { s.RateLimit, s.RateBurst = 2, 5 })
	busy, other := ts.Token(t, "alice"), ts.Token(t, "bob")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	get := func(tok string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", ts.URL+"/plants", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	const burst = 60
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	var badRetry []string
	for range burst {
		wg.Go(func() {
			resp, err := get(busy)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses[-1]++
				return
			}
			statuses[resp.StatusCode]++
			if resp.StatusCode == 429 {
				if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || secs < 1 {
					badRetry = append(badRetry, resp.Header.Get("Retry-After"))
				}
			}
		})
	}
	var slow []time.Duration
	for range 4 { // within the other token's own burst
		t0 := time.Now()
		resp, err := get(other)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("other token during the burst: %v %v", resp, err)
		}
		if d := time.Since(t0); d > time.Second { // a wait for the bucket would be seconds
			slow = append(slow, d)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	allowed := 5 + int(2*elapsed.Seconds()) + 1
	t.Logf("burst of %d in %v: %v", burst, elapsed, statuses)
	if statuses[200] > allowed || statuses[200]+statuses[429] != burst {
		t.Fatalf("statuses %v, want at most %d 200s and the rest 429", statuses, allowed)
	}
	if len(badRetry) > 0 {
		t.Fatalf("429s with Retry-After %q", badRetry)
	}
	if len(slow) > 0 {
		t.Fatalf("the other token waited %v", slow)
	}
	mustError(t, ts.Get(t, busy, "/plants"), 429, plantstore.CodeRateLimited)
}
