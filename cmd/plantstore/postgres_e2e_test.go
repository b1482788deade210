package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// launchServer starts the binary's serve command on db without waiting for
// it to be ready (see waitReady). The process is killed when the test ends,
// and its stderr logged if the test failed.
func launchServer(t *testing.T, name, db string, args ...string) *server {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// Never the default metrics address: servers run in parallel.
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(binary, append([]string{"serve", "--addr", addr, "--db", db}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PLANTSTORE_METRICS_ADDR=" + metricsAddr}
	s := &server{cmd: cmd, url: "http://" + addr, metricsURL: "http://" + metricsAddr, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = io.Discard
	cmd.Stderr = s.stderr
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	logStderrOnFailure(t, name, s)
	return s
}

// logStderrOnFailure logs the server's stderr when the test has failed.
func logStderrOnFailure(t *testing.T, name string, s *server) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr of %s (%s):\n%s", name, s.url, s.stderr)
		}
	})
}

// running reports whether the server process has not exited.
func (s *server) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return s.cmd.Process.Signal(syscall.Signal(0)) == nil
	}
}

// runBinary runs the plantstore binary as an operator would (bounded to
// 30 s) and returns its stdout; it fails the test if the command fails.
func runBinary(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := proctest.Run(cmd); err != nil {
		t.Fatalf("plantstore %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// binaryTokens runs `plantstore token list --format json` on db.
func binaryTokens(t *testing.T, db string) []listedToken {
	t.Helper()
	out := runBinary(t, "token", "list", "--format", "json", "--db", db)
	var tokens []listedToken
	if err := json.Unmarshal([]byte(out), &tokens); err != nil {
		t.Fatalf("token list --format json: %v\n%s", err, out)
	}
	return tokens
}

// response is what one request got, or the error that stopped it.
type response struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// send sends a request with the bearer token; it does not fail the test, so
// goroutines may call it.
func send(client *http.Client, method, url, token, body string) response {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return response{err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b, err: err}
}

func (r response) String() string {
	if r.err != nil {
		return r.err.Error()
	}
	return fmt.Sprintf("%d %s", r.status, strings.TrimSpace(string(r.body)))
}

// errorCode returns the error field of an Error body, or 0 when the body is
// not one.
func errorCode(body []byte) int32 {
	var e struct {
		Error   int32  `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return 0
	}
	return e.Error
}

// together runs fn(0) ... fn(n-1) in goroutines that wait at a barrier and
// are released at once, and returns their results in order.
func together(n int, fn func(i int) response) []response {
	out := make([]response, n)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			out[i] = fn(i)
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
	return out
}

// plantsOf decodes a GET /plants body.
func plantsOf(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var plants []map[string]any
	if err := json.Unmarshal(body, &plants); err != nil {
		t.Fatalf("GET /plants body %q: %v", body, err)
	}
	return plants
}

// newClient returns a client for n concurrent requests, each bounded to
// timeout so a hung request fails the test instead of blocking it.
func newClient(t *testing.T, n int, timeout time.Duration) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: timeout, Transport: tr}
}

// TestTwoReplicas runs two `plantstore serve` processes on one PostgreSQL
// database and checks that they behave as one service: concurrent creates
// of one id resolve the same on both, each sees the other's writes, and a
// revoked token is refused by both at once (there is no token cache).
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	const adminSecret = "two-replicas-admin-token-0123456789abcdef"
	db := pgtest.NewDatabase(t)

	// Both start at once on the empty database: they race to migrate and
	// to register the bootstrap token.
	args := []string{"--bootstrap-token", adminSecret, "--rate-limit", "0"}
	a := launchServer(t, "replica A", db, args...)
	b := launchServer(t, "replica B", db, args...)
	a.waitReady(t)
	b.waitReady(t)
	replicas := []*server{a, b}

	bob := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "bob", "--db", db))
	client := newClient(t, 16, 15*time.Second)

	// get sends a request through replica s and fails the test on a
	// transport error.
	get := func(t *testing.T, method string, s *server, path, token, body string) response {
		t.Helper()
		r := send(client, method, s.url+path, token, body)
		if r.err != nil {
			t.Fatalf("%s %s%s: %v", method, s.url, path, r.err)
		}
		return r
	}

	t.Run("IdenticalCreates", func(t *testing.T) {
		const body = `{"id":1,"name":"Fern","tag":"green"}`
		got := together(16, func(i int) response {
			return send(client, "POST", replicas[i%2].url+"/plants", adminSecret, body)
		})
		for i, r := range got {
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("create %d (replica %c): %v, want 200", i, "AB"[i%2], r)
			}
			if string(r.body) != string(got[0].body) {
				t.Fatalf("create %d answered %s, create 0 answered %s; want identical bodies", i, r.body, got[0].body)
			}
		}
		for _, s := range replicas {
			r := get(t, "GET", s, "/plants", adminSecret, "")
			if r.status != http.StatusOK {
				t.Fatalf("GET /plants: %v", r)
			}
			want := []map[string]any{{"id": float64(1), "name": "Fern", "tag": "green"}}
			if diff := cmp.Diff(want, createdPlants(t, plantsOf(t, r.body))); diff != "" {
				t.Fatalf("GET %s/plants after 16 identical creates (-want +got):\n%s", s.url, diff)
			}
		}
	})

	t.Run("ConflictingCreates", func(t *testing.T) {
		got := together(16, func(i int) response {
			body := fmt.Sprintf(`{"id":2,"name":"Name %d"}`, i)
			return send(client, "POST", replicas[i%2].url+"/plants", adminSecret, body)
		})
		var winners []int
		for i, r := range got {
			switch {
			case r.err != nil:
				t.Fatalf("create %d (replica %c): %v", i, "AB"[i%2], r.err)
			case r.status == http.StatusOK:
				winners = append(winners, i)
			case r.status == http.StatusConflict && errorCode(r.body) == 40901:
			default:
				t.Fatalf("create %d (replica %c): %v, want 200 or 409 with error 40901", i, "AB"[i%2], r)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("%d creates answered 200 (%v), want exactly 1; the others 409", len(winners), winners)
		}
		var won map[string]any
		if err := json.Unmarshal(got[winners[0]].body, &won); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"id": float64(2), "name": fmt.Sprintf("Name %d", winners[0])}, createdPlant(t, won)); diff != "" {
			t.Fatalf("the winner's answer (-want +got):\n%s", diff)
		}
		for _, s := range replicas {
			r := get(t, "GET", s, "/plants/2", adminSecret, "")
			if r.status != http.StatusOK {
				t.Fatalf("GET %s/plants/2: %v", s.url, r)
			}
			var stored map[string]any
			if err := json.Unmarshal(r.body, &stored); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(won, stored); diff != "" {
				t.Fatalf("GET %s/plants/2: stored plant differs from the winner (-winner +stored):\n%s", s.url, diff)
			}
		}
	})

	t.Run("WriteThroughOneReadThroughOther", func(t *testing.T) {
		const body = `{"id":3,"name":"Monstera"}`
		r := get(t, "POST", a, "/plants", bob, body)
		if r.status != http.StatusOK {
			t.Fatalf("POST /plants through A: %v", r)
		}
		created := string(r.body)

		r = get(t, "GET", b, "/plants", bob, "")
		if r.status != http.StatusOK {
			t.Fatalf("GET /plants through B: %v", r)
		}
		if diff := cmp.Diff([]map[string]any{{"id": float64(3), "name": "Monstera"}}, createdPlants(t, plantsOf(t, r.body))); diff != "" {
			t.Fatalf("GET /plants through B (-want +got):\n%s", diff)
		}
		r = get(t, "GET", b, "/plants/3", bob, "")
		if r.status != http.StatusOK || string(r.body) != created {
			t.Fatalf("GET /plants/3 through B: %v, want 200 %s", r, created)
		}

		if r = get(t, "DELETE", b, "/plants/3", bob, ""); r.status != http.StatusNoContent {
			t.Fatalf("DELETE /plants/3 through B: %v, want 204", r)
		}
		r = get(t, "GET", a, "/plants/3", bob, "")
		if r.status != http.StatusNotFound || errorCode(r.body) != 40401 {
			t.Fatalf("GET /plants/3 through A after the delete through B: %v, want 404 with error 40401", r)
		}
		r = get(t, "GET", a, "/plants", bob, "")
		if r.status != http.StatusOK || len(plantsOf(t, r.body)) != 0 {
			t.Fatalf("GET /plants through A after the delete through B: %v, want 200 []", r)
		}
	})

	// Revocation is immediate on every replica: the service keeps no token
	// cache, each request looks the token up in the shared database.
	t.Run("RevokedTokenRefusedByBoth", func(t *testing.T) {
		secret := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "carol", "--db", db))
		for _, s := range replicas {
			if r := get(t, "GET", s, "/plants", secret, ""); r.status != http.StatusOK {
				t.Fatalf("GET %s/plants with carol's new token: %v", s.url, r)
			}
		}
		var id string
		for _, tok := range binaryTokens(t, db) {
			if tok.Owner == "carol" {
				id = tok.ID
			}
		}
		if id == "" {
			t.Fatal("token list does not show carol's token")
		}
		runBinary(t, "token", "revoke", id, "--db", db)
		revoked := time.Now()

		// The documented bound: a revocation takes effect within the token
		// cache TTL (--token-cache-ttl, default 2s) on every replica.
		const bound = 2*time.Second + 500*time.Millisecond
		for _, s := range replicas {
			var r response
			for {
				r = get(t, "GET", s, "/plants", secret, "")
				if r.status != http.StatusOK || time.Since(revoked) > bound {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if r.status != http.StatusUnauthorized || errorCode(r.body) != 40102 {
				t.Fatalf("GET %s/plants %v after the revoke: %v, want 401 with error 40102", s.url, time.Since(revoked), r)
			}
			if got := r.header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
				t.Fatalf("GET %s/plants right after the revoke: WWW-Authenticate %q, want error=\"invalid_token\"", s.url, got)
			}
			// Other tokens are not affected.
			if r := get(t, "GET", s, "/plants", bob, ""); r.status != http.StatusOK {
				t.Fatalf("GET %s/plants with bob's token after carol's revoke: %v", s.url, r)
			}
		}
	})

	// Two replicas starting at once with the default bootstrap: exactly one
	// of them creates and prints the admin token. On a brand-new database
	// they also race to migrate (the migration lock orders them); on a
	// migrated one with --no-migrate nothing orders them but the database.
	for _, tt := range []struct {
		name      string
		migrated  bool
		serveArgs []string
	}{
		{"EmptyDatabase", false, []string{"--rate-limit", "0"}},
		{"MigratedDatabaseNoMigrate", true, []string{"--rate-limit", "0", "--no-migrate"}},
	} {
		t.Run("ConcurrentStartBootstrap/"+tt.name, func(t *testing.T) {
			db := pgtest.NewDatabase(t)
			if tt.migrated {
				runBinary(t, "migrate", "--db", db)
			}
			c := launchServer(t, "replica C", db, tt.serveArgs...)
			d := launchServer(t, "replica D", db, tt.serveArgs...)
			c.waitReady(t)
			d.waitReady(t)

			stderr := c.stderr.String() + d.stderr.String()
			secrets := secretRE.FindAllString(stderr, -1)
			if len(secrets) != 1 {
				t.Fatalf("the two replicas printed %d tokens, want exactly 1:\n%s", len(secrets), stderr)
			}
			if n := strings.Count(stderr, "no tokens yet"); n != 1 {
				t.Fatalf(`"no tokens yet" appears %d times, want 1:`+"\n%s", n, stderr)
			}
			tokens := binaryTokens(t, db)
			if len(tokens) != 1 || tokens[0].Owner != "admin" {
				t.Fatalf("token list shows %+v, want exactly one token, for admin", tokens)
			}
			for _, s := range []*server{c, d} {
				if r := get(t, "GET", s, "/plants", secrets[0], ""); r.status != http.StatusOK {
					t.Fatalf("GET %s/plants with the printed token: %v", s.url, r)
				}
			}
		})
	}
}

// TestPostgresRestartRecovery stops PostgreSQL under a running replica:
// requests during the outage get 503 with an Error body (none hangs), and the
// replica resumes by itself once PostgreSQL is back, without a restart.
func TestPostgresRestartRecovery(t *testing.T) {
	t.Parallel()
	const secret = "restart-recovery-token-0123456789abcdef"
	cluster := pgtest.StartCluster(t)
	db := cluster.CreateDatabase(t, "")
	s := launchServer(t, "plantstore serve", db, "--db-timeout", "3s", "--bootstrap-token", secret, "--rate-limit", "0")
	s.waitReady(t)
	pid := s.cmd.Process.Pid
	client := newClient(t, 4, 15*time.Second)

	// req sends a request; a transport error (a client timeout above all)
	// fails the test.
	req := func(t *testing.T, method, path, body string) response {
		t.Helper()
		r := send(client, method, s.url+path, secret, body)
		var netErr net.Error
		if errors.As(r.err, &netErr) && netErr.Timeout() {
			t.Fatalf("%s %s hung: no answer within %v: %v", method, path, client.Timeout, r.err)
		} else if r.err != nil {
			t.Fatalf("%s %s: %v", method, path, r.err)
		}
		return r
	}

	const plant = `{"id":1,"name":"Fern"}`
	r := req(t, "POST", "/plants", plant)
	if r.status != http.StatusOK {
		t.Fatalf("POST /plants: %v", r)
	}
	stored := string(r.body)

	cluster.Stop(t)
	outage := []struct{ method, path, body string }{
		{"GET", "/plants", ""},
		{"GET", "/plants/1", ""},
		{"POST", "/plants", `{"id":2,"name":"Ivy"}`},
		{"GET", "/readyz", ""},
	}
	for round := range 10 {
		for _, o := range outage {
			r := req(t, o.method, o.path, o.body)
			if r.status != http.StatusServiceUnavailable || errorCode(r.body) != 50301 {
				t.Fatalf("round %d, PostgreSQL stopped: %s %s: %v, want 503 with error 50301", round, o.method, o.path, r)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("round %d: %s %s: Content-Type %q, want JSON", round, o.method, o.path, ct)
			}
		}
		if r := req(t, "GET", "/healthz", ""); r.status != http.StatusOK {
			t.Fatalf("round %d, PostgreSQL stopped: GET /healthz: %v, want 200", round, r)
		}
		time.Sleep(200 * time.Millisecond)
	}

	cluster.Start(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := req(t, "GET", "/readyz", "")
		if r.status == http.StatusOK {
			break
		}
		if r.status != http.StatusServiceUnavailable || errorCode(r.body) != 50301 {
			t.Fatalf("GET /readyz after PostgreSQL restarted: %v, want 200 or 503 with error 50301", r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz still %v 30 s after PostgreSQL restarted", r)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if r := req(t, "GET", "/plants/1", ""); r.status != http.StatusOK || string(r.body) != stored {
		t.Fatalf("GET /plants/1 after recovery: %v, want 200 %s", r, stored)
	}
	const newPlant = `{"id":3,"name":"Aloe"}`
	created := req(t, "POST", "/plants", newPlant)
	if created.status != http.StatusOK {
		t.Fatalf("POST /plants after recovery: %v", created)
	}
	if r := req(t, "POST", "/plants", newPlant); r.status != http.StatusOK || string(r.body) != string(created.body) {
		t.Fatalf("replayed POST /plants after recovery: %v, want 200 %s", r, created.body)
	}
	r = req(t, "GET", "/plants", "")
	if r.status != http.StatusOK {
		t.Fatalf("GET /plants after recovery: %v", r)
	}
	var ids []float64
	for _, p := range plantsOf(t, r.body) {
		ids = append(ids, p["id"].(float64))
	}
	if !slices.Equal(ids, []float64{1, 3}) {
		t.Fatalf("GET /plants after recovery: %v, want plants 1 and 3 (none created during the outage)", r)
	}
	if !s.running() || s.cmd.Process.Pid != pid {
		t.Fatalf("plantstore serve (pid %d) is no longer running: %v", pid, s.err)
	}
}
