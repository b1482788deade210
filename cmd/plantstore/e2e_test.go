package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// binary is the plantstore binary that TestMain builds for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	// The tests here spend most of their time waiting for the processes
	// they start (plantstore, PostgreSQL, PgBouncer) and for the disk:
	// unless -test.parallel says otherwise, run more of them at once than
	// GOMAXPROCS, the default (2 on a 2-core machine).
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	dir, err := proctest.MkdirTemp("", "plantstore-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "plantstore")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build plantstore:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pgtest.Run(m) // stops the shared PostgreSQL of pgtest.NewDatabase
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for the process's output copier and
// the test reading it at the same time.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is a running `plantstore serve` process.
type server struct {
	cmd        *exec.Cmd
	url        string
	metricsURL string // the metrics listener's base URL (launchServer only)
	stderr     *syncBuffer
	done       chan struct{} // closed when the process has exited
	err        error         // Wait's result, set before done is closed
}

// freePort returns a port on 127.0.0.1 that is free and reserved for t
// (proctest.FreePort).
func freePort(t *testing.T) int {
	t.Helper()
	return proctest.FreePort(t)
}

// startServer runs the binary's serve command on db and waits until /healthz
// answers. The process is killed when the test ends; its stderr is logged
// if the test fails.
func startServer(t *testing.T, db string, args ...string) *server {
	t.Helper()
	s := launchServer(t, "plantstore serve", db, args...)
	s.waitReady(t)
	return s
}

// waitReady polls /healthz until it answers 200, the process exits or 10 s pass.
func (s *server) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			t.Fatalf("plantstore serve exited before it was ready: %v\nstderr:\n%s", s.err, s.stderr)
		default:
		}
		res, err := client.Get(s.url + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("plantstore serve not ready after 10 s: %v\nstderr:\n%s", err, s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits (at most 10 s) for the process to exit.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(10 * time.Second):
		t.Fatalf("plantstore serve still running 10 s after SIGTERM\nstderr:\n%s", s.stderr)
		return nil
	}
}

// do sends a request with the bearer token and returns status, headers and body.
func do(t *testing.T, client *http.Client, method, url, token, body string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

var testClient = &http.Client{Timeout: 10 * time.Second}

// plantTimeRE matches a plant's created_at or updated_at as the API writes
// them: RFC 3339 in UTC with exactly 6 fraction digits.
var plantTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// createdPlant checks the times of p, a plant decoded from an answer and
// not changed since its create: created_at and updated_at are there, well
// formed, and equal. It returns p without them, for an exact comparison of
// the rest: the binary runs on the real clock, so a test cannot know them.
func createdPlant(t *testing.T, p map[string]any) map[string]any {
	t.Helper()
	created, _ := p["created_at"].(string)
	updated, _ := p["updated_at"].(string)
	if !plantTimeRE.MatchString(created) || !plantTimeRE.MatchString(updated) {
		t.Fatalf("plant %v: created_at %q, updated_at %q; want both RFC 3339 UTC with 6 fraction digits", p, created, updated)
	}
	if created != updated {
		t.Fatalf("plant %v: created_at %q, updated_at %q; want them equal on a plant never changed", p, created, updated)
	}
	rest := maps.Clone(p)
	delete(rest, "created_at")
	delete(rest, "updated_at")
	return rest
}

// createdPlants is createdPlant for each plant of a list.
func createdPlants(t *testing.T, ps []map[string]any) []map[string]any {
	t.Helper()
	rest := make([]map[string]any, len(ps))
	for i, p := range ps {
		rest[i] = createdPlant(t, p)
	}
	return rest
}

// bootstrapSecret returns the one token the stderr text shows, or "".
func bootstrapSecret(t *testing.T, stderr string) string {
	t.Helper()
	found := secretRE.FindAllString(stderr, -1)
	if len(found) > 1 {
		t.Fatalf("stderr shows %d tokens, want at most one:\n%s", len(found), stderr)
	}
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

func TestServeBootstrap(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := tempDBPath(t)
		s := startServer(t, db)
		stderr := s.stderr.String()
		secret := bootstrapSecret(t, stderr)
		if secret == "" {
			t.Fatalf("first start printed no token on stderr:\n%s", stderr)
		}
		if !regexp.MustCompile(`(?m)^\s*` + secret + `\s*$`).MatchString(stderr) {
			t.Fatalf("the token is not on a line of its own:\n%s", stderr)
		}
		if !strings.Contains(stderr, "plantstore token create") {
			t.Fatalf("stderr does not say how to make more tokens:\n%s", stderr)
		}

		status, _, body := do(t, testClient, "POST", s.url+"/plants", secret, `{"id":1,"name":"Fern"}`)
		if got, want := status, http.StatusOK; got != want {
			t.Fatalf("POST /plants: status %d, want %d: %s", got, want, body)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("POST /plants body %q: %v", body, err)
		}
		if diff := cmp.Diff(map[string]any{"id": float64(1), "name": "Fern"}, createdPlant(t, got)); diff != "" {
			t.Fatalf("POST /plants body (-want +got):\n%s", diff)
		}

		if err := s.stop(t); err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}

		// A second start on the same file prints no new token, and the
		// first one still works.
		s = startServer(t, db)
		if secretRE.MatchString(s.stderr.String()) || strings.Contains(s.stderr.String(), "no tokens yet") {
			t.Fatalf("second start printed a token:\n%s", s.stderr)
		}
		status, _, body = do(t, testClient, "GET", s.url+"/plants/1", secret, "")
		if got, want := status, http.StatusOK; got != want {
			t.Fatalf("GET /plants/1 after restart: status %d, want %d: %s", got, want, body)
		}
		if n := len(listJSON(t, db)); n != 1 {
			t.Fatalf("%d tokens after two starts, want 1", n)
		}
	})

	t.Run("NoBootstrapAdmin", func(t *testing.T) {
		db := tempDBPath(t)
		s := startServer(t, db, "--no-bootstrap-admin")
		if secretRE.MatchString(s.stderr.String()) || strings.Contains(s.stderr.String(), "no tokens yet") {
			t.Fatalf("--no-bootstrap-admin printed a token:\n%s", s.stderr)
		}
		if n := len(listJSON(t, db)); n != 0 {
			t.Fatalf("%d tokens, want 0", n)
		}
	})

	t.Run("BootstrapToken", func(t *testing.T) {
		db := tempDBPath(t)
		const secret = `Sup!plied#token$with%punct&and*digits0123456789+` // 48 visible characters
		if len(secret) != 48 {
			t.Fatalf("test secret has %d characters", len(secret))
		}
		s := startServer(t, db, "--bootstrap-token", secret)
		if strings.Contains(s.stderr.String(), secret) || secretRE.MatchString(s.stderr.String()) {
			t.Fatalf("stderr shows a secret:\n%s", s.stderr)
		}
		status, _, body := do(t, testClient, "POST", s.url+"/plants", secret, `{"id":1,"name":"Fern"}`)
		if got, want := status, http.StatusOK; got != want {
			t.Fatalf("POST /plants with the supplied token: status %d, want %d: %s", got, want, body)
		}
		tokens := listJSON(t, db)
		if got, want := len(tokens), 1; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
		if got, want := tokens[0].Owner, "admin"; got != want {
			t.Fatalf("Owner = %q, want %q", got, want)
		}
	})

	t.Run("BootstrapTokenFromEnv", func(t *testing.T) {
		db := tempDBPath(t)
		secret := strings.Repeat("e", 40)
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cmd := exec.Command(binary, "serve")
		cmd.Env = []string{"PLANTSTORE_ADDR=" + addr, "PLANTSTORE_DB=" + db, "PLANTSTORE_BOOTSTRAP_TOKEN=" + secret, "PLANTSTORE_METRICS_ADDR=off"}
		s := &server{cmd: cmd, url: "http://" + addr, stderr: &syncBuffer{}, done: make(chan struct{})}
		cmd.Stderr = s.stderr
		if err := proctest.Start(cmd); err != nil {
			t.Fatal(err)
		}
		go func() { s.err = cmd.Wait(); close(s.done) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-s.done })
		s.waitReady(t)
		status, _, body := do(t, testClient, "GET", s.url+"/plants", secret, "")
		if got, want := status, http.StatusOK; got != want {
			t.Fatalf("GET /plants with PLANTSTORE_BOOTSTRAP_TOKEN: status %d, want %d: %s", got, want, body)
		}
	})

	// Tokens made and revoked with the CLI act on a running server.
	t.Run("TokenCommandsWhileServing", func(t *testing.T) {
		db := tempDBPath(t)
		s := startServer(t, db, "--no-bootstrap-admin")

		out, err := proctest.Output(exec.Command(binary, "token", "create", "--owner", "bob", "--scope", "plants:read", "--db", db))
		if err != nil {
			t.Fatalf("token create: %v", err)
		}
		if !tokenLineRE.Match(out) {
			t.Fatalf("token create stdout = %q, want one token line", out)
		}
		secret := strings.TrimSpace(string(out))

		if status, _, body := do(t, testClient, "GET", s.url+"/plants", secret, ""); status != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
			t.Fatalf("GET /plants: %d %s, want 200 []", status, body)
		}
		if status, _, _ := do(t, testClient, "POST", s.url+"/plants", secret, `{"id":1,"name":"Fern"}`); status != http.StatusForbidden {
			t.Fatalf("POST /plants with a read-only token: status %d, want 403", status)
		}

		id := listJSON(t, db)[0].ID
		if out, err := proctest.CombinedOutput(exec.Command(binary, "token", "revoke", id, "--db", db)); err != nil {
			t.Fatalf("token revoke: %v: %s", err, out)
		}
		// Refused within the documented bound, --token-cache-ttl (2s).
		revoked := time.Now()
		for {
			status, _, _ := do(t, testClient, "GET", s.url+"/plants", secret, "")
			if status == http.StatusUnauthorized {
				break
			}
			if status != http.StatusOK || time.Since(revoked) > 2500*time.Millisecond {
				t.Fatalf("GET /plants with a token revoked %v ago: status %d, want 401", time.Since(revoked), status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func TestServeSIGTERM(t *testing.T) {
	t.Parallel()
	s := startServer(t, tempDBPath(t), "--no-bootstrap-admin")
	if err := s.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0\nstderr:\n%s", err, s.stderr)
	}
	if got, want := s.cmd.ProcessState.ExitCode(), 0; got != want {
		t.Fatalf("exit code %d, want %d", got, want)
	}
	if !strings.Contains(s.stderr.String(), "shutting down") {
		t.Fatalf("stderr does not log the shutdown:\n%s", s.stderr)
	}
}

// TestKill9 creates plants from concurrent clients, kills the server with
// SIGKILL while they are still sending, restarts it on the same database and
// checks that every plant that got a 200 is there: on a SQLite file and on a
// PostgreSQL database.
func TestKill9(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testKill9(t, tempDBPath(t))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		testKill9(t, pgtest.NewDatabase(t))
	})
}

// testKill9 is TestKill9 on the database db (a file path or a postgres:// URL).
func testKill9(t *testing.T, db string) {
	const (
		clients     = 8
		maxRequests = 3000 // all clients together
		killAfter   = 2000 // acknowledged creates; or after loadFor
		loadFor     = 1500 * time.Millisecond
		secret      = "kill-nine-test-token-0123456789abcdef"
	)
	s := startServer(t, db, "--bootstrap-token", secret, "--rate-limit", "0")
	logStderrOnFailure(t, "plantstore serve (before the kill)", s)

	var (
		mu        sync.Mutex
		acked     []int64
		sent      = map[int64]bool{}
		ackCount  atomic.Int64
		requests  atomic.Int64
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		transport = &http.Transport{MaxIdleConnsPerHost: clients}
	)
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	defer transport.CloseIdleConnections()

	for c := range clients {
		wg.Go(func() {
			for i := int64(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if requests.Add(1) > maxRequests {
					return
				}
				id := int64(c)*1_000_000 + i
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				body := fmt.Sprintf(`{"id":%d,"name":"Plant %d","tag":"c%d"}`, id, id, c)
				req, err := http.NewRequest("POST", s.url+"/plants", strings.NewReader(body))
				if err != nil {
					panic(err)
				}
				req.Header.Set("Authorization", "Bearer "+secret)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					return // the server was killed
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					ackCount.Add(1)
				}
			}
		})
	}

	// Kill once the load has run for loadFor or killAfter creates were
	// acknowledged, whichever comes first; at least one must be acknowledged
	// (waiting at most 10 s for that).
	start := time.Now()
	for {
		n := ackCount.Load()
		if n >= killAfter || (n > 0 && time.Since(start) >= loadFor) {
			break
		}
		if time.Since(start) > 10*time.Second {
			close(stop)
			wg.Wait()
			t.Fatalf("no create acknowledged within 10 s\nstderr:\n%s", s.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	startedBeforeKill := requests.Load()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.done
	close(stop)
	wg.Wait()
	transport.CloseIdleConnections()
	if startedBeforeKill > maxRequests {
		// Only possible when over a third of the creates were refused.
		t.Fatalf("all %d requests were sent before the kill, only %d acknowledged\nstderr:\n%s", maxRequests, ackCount.Load(), s.stderr)
	}
	t.Logf("%d creates acknowledged before SIGKILL (%d requests started)", len(acked), min(requests.Load(), maxRequests))

	// Restart on the same file and read every plant back, page by page.
	s = startServer(t, db, "--rate-limit", "0")
	logStderrOnFailure(t, "plantstore serve (after the kill)", s)
	found := map[int64]bool{}
	for _, p := range allPlants(t, client, s.url, secret) {
		if found[p.ID] {
			t.Fatalf("plant %d listed twice", p.ID)
		}
		if got, want := p.Name, fmt.Sprintf("Plant %d", p.ID); got != want {
			t.Fatalf("plant %d: name %q, want %q", p.ID, got, want)
		}
		found[p.ID] = true
	}

	var missing []int64
	for _, id := range acked {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged plants lost after kill -9, e.g. %v", len(missing), len(acked), missing[:min(len(missing), 10)])
	}
	for id := range found {
		if !sent[id] {
			t.Fatalf("plant %d is stored but was never sent", id)
		}
	}
	// Spot-check reads by id too.
	for _, id := range acked[:min(len(acked), 20)] {
		if status, _, body := do(t, client, "GET", fmt.Sprintf("%s/plants/%d", s.url, id), secret, ""); status != http.StatusOK {
			t.Fatalf("GET /plants/%d: status %d: %s", id, status, body)
		}
	}
}

// listedPlant is a plant as GET /plants lists it.
type listedPlant struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// allPlants lists every plant of the token's owner, in order, 1000 a page,
// following the Link header; it fails the test on any answer but 200.
func allPlants(t *testing.T, client *http.Client, base, token string) []listedPlant {
	t.Helper()
	var plants []listedPlant
	next := base + "/plants?limit=1000"
	for pages := 0; next != ""; pages++ {
		if pages > 10_000 {
			t.Fatal("paging does not end")
		}
		status, header, body := do(t, client, "GET", next, token, "")
		if status != http.StatusOK {
			t.Fatalf("GET %s: status %d: %s", next, status, body)
		}
		var page []listedPlant
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET %s: %v", next, err)
		}
		plants = append(plants, page...)
		next = nextLink(t, base, header)
	}
	return plants
}

var linkNextRE = regexp.MustCompile(`<([^>]*)>\s*;\s*rel="?next"?`)

// nextLink returns the absolute URL of the Link header's rel="next", or "".
func nextLink(t *testing.T, base string, h http.Header) string {
	t.Helper()
	for _, v := range h.Values("Link") {
		if m := linkNextRE.FindStringSubmatch(v); m != nil {
			b, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			u, err := b.Parse(m[1])
			if err != nil {
				t.Fatalf("Link %q: %v", v, err)
			}
			return u.String()
		}
	}
	return ""
}
