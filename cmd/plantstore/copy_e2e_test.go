package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// TestCopyToPostgres is the move of docs/scaling.md, with the binary: a
// SQLite database with 100k plants, tokens, a subscription and pending
// deliveries is copied to PostgreSQL while its server serves, then, the
// server stopped, a second pass (--resume) brings over what changed; a
// server on PostgreSQL then answers the old tokens, lists every plant and
// delivers the pending webhooks, signed with the old secret.
func TestCopyToPostgres(t *testing.T) {
	t.Parallel()
	const bulk = 100_000
	db := tempDBPath(t)
	since := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	// alice subscribes a loopback receiver, on a server that allows it;
	// then the SQLite server runs without --webhook-allow-private: each of
	// her deliveries fails at once, without a connection (refused
	// address); on PostgreSQL they are recovered and delivered.
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--webhook-allow-private")
	alice := webhookToken(t, db, "alice")
	bob := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "bob", "--db", db, "--scope", "plants:read"))
	rcv := newReceiver(t)
	hookID, secret := subscribe(t, s, alice, rcv.URL+"/hook")
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0")
	for id := 1; id <= 3; id++ {
		if status, _, body := do(t, testClient, "POST", s.url+"/plants", alice, fmt.Sprintf(`{"id":%d,"name":"Fern %d"}`, id, id)); status != 200 {
			t.Fatalf("create: %d %s", status, body)
		}
	}

	// 100k plants of bob's, loaded by plantstore import while the server runs.
	jsonl := filepath.Join(t.TempDir(), "bob.jsonl")
	f, err := os.Create(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range bulk {
		fmt.Fprintf(w, `{"owner":"bob","id":%d,"name":"plant %d","tag":"t%d"}`+"\n", i, i, i%10)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	runBinary(t, "import", "--db", db, "--from", jsonl)

	pg := pgtest.NewDatabase(t)
	start := time.Now()
	out := runBinary(t, "copy", "--from", db, "--to", pg) // while s serves
	t.Logf("first pass (%d rows) took %v", bulk+3, time.Since(start))
	if !strings.Contains(out, "plants") || !strings.Contains(out, fmt.Sprint(bulk+3)) {
		t.Fatalf("copy printed:\n%s", out)
	}
	// The cut-over: a write after the first pass, the server stopped, a
	// second pass.
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", alice, `{"id":4,"name":"Late"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if n := len(rcv.got()); n != 0 {
		t.Fatalf("the SQLite server delivered %d webhooks to a loopback receiver", n)
	}
	start = time.Now()
	out = runBinary(t, "copy", "--from", db, "--to", pg, "--resume")
	t.Logf("second pass took %v", time.Since(start))
	if !regexpLine(out, `^plants\s+100004\s+1\s+0\s`) {
		t.Fatalf("second pass: want plants 100004 rows, 1 inserted, 0 deleted:\n%s", out)
	}

	ps := startServer(t, pg, "--no-bootstrap-admin", "--rate-limit", "0", "--webhook-allow-private", "--webhook-first-retry", "100ms")
	// The old tokens: bob's lists every plant; alice's lists hers.
	var ids []int64
	for _, p := range allPlants(t, testClient, ps.url, bob) {
		ids = append(ids, p.ID)
	}
	if len(ids) != bulk || !slices.IsSorted(ids) || ids[0] != 0 || ids[bulk-1] != bulk-1 {
		t.Fatalf("bob's plants on PostgreSQL: %d, want %d (0..%d)", len(ids), bulk, bulk-1)
	}
	status, _, body := do(t, testClient, "GET", ps.url+"/plants", alice, "")
	if status != 200 || strings.Count(string(body), `"id"`) != 4 {
		t.Fatalf("alice's plants on PostgreSQL: %d %s", status, body)
	}
	// The deliveries the SQLite server refused, one per plant of alice's,
	// are recovered, and arrive signed with the subscription's secret.
	status, _, body = do(t, testClient, "POST", ps.url+"/webhooks/"+hookID+"/recover", alice, `{"since":"`+since+`"}`)
	if status != 202 || !strings.Contains(string(body), `"requeued":4`) {
		t.Fatalf("recover on PostgreSQL: %d %s, want 202 with 4 re-queued", status, body)
	}
	waitFor(t, 30*time.Second, "the 4 pending deliveries", func() bool { return len(rcv.got()) >= 4 })
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rcv.got() {
		if err := wh.Verify([]byte(d.body), d.headers); err != nil {
			t.Fatalf("delivery %s: signature: %v", d.body, err)
		}
		got = append(got, d.body)
	}
	slices.Sort(got)
	want := []string{`{"id":1,"name":"Fern 1"}`, `{"id":2,"name":"Fern 2"}`, `{"id":3,"name":"Fern 3"}`, `{"id":4,"name":"Late"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
}

// regexpLine reports whether a line of out matches the pattern.
func regexpLine(out, pattern string) bool {
	re := regexp.MustCompile(`(?m)` + pattern)
	for _, l := range strings.Split(out, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// TestCopyInterrupted: Ctrl-C stops a copy with status 130 and a message
// that says to resume; what it wrote stays, and --resume writes only the
// rest. So does `plantstore import`, run again.
func TestCopyInterrupted(t *testing.T) {
	t.Parallel()
	const n = 100_000
	src := missingDBPath(t)
	runBinary(t, "migrate", "--db", src)
	jsonl := filepath.Join(t.TempDir(), "p.jsonl")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"owner":"o%d","id":%d,"name":"p"}`+"\n", i%7, i)
	}
	if err := os.WriteFile(jsonl, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	runBinary(t, "import", "--db", src, "--from", jsonl)

	dst := filepath.Join(t.TempDir(), "copy.db")
	cmd := exec.Command(binary, "copy", "--from", src, "--to", dst, "--chunk-rows", "50")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	// Interrupt once some chunks are in.
	copied := func() int64 {
		db, err := sql.Open("sqlite3", "file:"+dst+"?mode=ro")
		if err != nil {
			return 0
		}
		defer db.Close()
		var c int64
		db.QueryRow(`SELECT COUNT(*) FROM plants`).Scan(&c)
		return c
	}
	waitFor(t, 20*time.Second, "the first chunks", func() bool { return copied() >= 500 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if got := exitCodeOf(err); got != 130 {
		t.Fatalf("interrupted copy: exit %d (%v), want 130\nstderr:\n%s", got, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--resume") {
		t.Fatalf("interrupted copy says:\n%s", stderr.String())
	}
	done := copied()
	if done == 0 || done >= n {
		t.Fatalf("%d plants copied before the interrupt, want some of %d", done, n)
	}
	out := runBinary(t, "copy", "--from", src, "--to", dst, "--resume")
	if !regexpLine(out, fmt.Sprintf(`^plants\s+%d\s+%d\s+0\s`, n, n-done)) {
		t.Fatalf("resumed copy: want plants %d rows, %d inserted:\n%s", n, n-done, out)
	}
}
