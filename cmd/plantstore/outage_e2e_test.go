package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestPostgresOutageLogged stops PostgreSQL under a running server for a
// few seconds: each periodic storage call (the dispatcher's claims, its
// queue gauges and history pruning, the event pruner) and the /readyz
// probes log the outage once when it starts and once when it ends, with
// the count of failed attempts, not once per attempt.
func TestPostgresOutageLogged(t *testing.T) {
	t.Parallel()
	const secret = "outage-logged-token-0123456789abcdef"
	cluster := pgtest.StartCluster(t)
	db := cluster.CreateDatabase(t, "")
	// Retentions of 1s: both pruners run every second.
	s := launchServer(t, "plantstore serve", db, "--db-timeout", "2s", "--bootstrap-token", secret, "--rate-limit", "0",
		"--event-retention", "1s", "--webhook-retention", "1s")
	s.waitReady(t)
	client := &http.Client{Timeout: 10 * time.Second}
	probe := func() int {
		t.Helper()
		res, err := client.Get(s.url + "/readyz")
		if err != nil {
			t.Fatalf("GET /readyz: %v", err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if status := probe(); status != http.StatusOK {
		t.Fatalf("GET /readyz before the outage: %d", status)
	}

	cluster.Stop(t)
	// /readyz follows the writes: 503 from the first write that fails (the
	// pruners write every second), or from its own check once no write has
	// come for a second; then 503 throughout. Longer than the queue
	// gauges' interval (5 s), so each loop fails at least once; /readyz is
	// probed as an orchestrator does.
	waitFor(t, 5*time.Second, "GET /readyz 503 with PostgreSQL stopped", func() bool { return probe() == http.StatusServiceUnavailable })
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		if status := probe(); status != http.StatusServiceUnavailable {
			t.Fatalf("GET /readyz with PostgreSQL stopped: %d, want 503", status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cluster.Start(t)
	waitFor(t, 30*time.Second, "GET /readyz 200 after PostgreSQL restarted", func() bool { return probe() == http.StatusOK })

	ops := []struct {
		op          string
		minFailures int
	}{
		{"webhook: claim tasks", 5},            // every 500 ms
		{"webhook: outbox stats", 1},           // every 5 s
		{"webhook: prune delivery history", 2}, // every 1 s
		{"events: prune", 2},                   // every 1 s
		{"readyz: storage does not answer", 20},
	}
	type line struct {
		Level          string `json:"level"`
		Msg            string `json:"msg"`
		Err            string `json:"err"`
		FailedAttempts int    `json:"failed_attempts"`
	}
	lines := func() []line {
		var out []line
		for l := range strings.Lines(s.stderr.String()) {
			var v line
			if json.Unmarshal([]byte(l), &v) == nil {
				out = append(out, v)
			}
		}
		return out
	}
	waitFor(t, 20*time.Second, "the end of every outage in the log", func() bool {
		ended := map[string]bool{}
		for _, l := range lines() {
			ended[strings.TrimSuffix(l.Msg, ": outage ended")] = strings.HasSuffix(l.Msg, ": outage ended")
		}
		for _, o := range ops {
			if !ended[o.op] {
				return false
			}
		}
		return true
	})
	all := lines()
	for _, o := range ops {
		var started, ended []line
		for _, l := range all {
			switch l.Msg {
			case o.op + ": outage started":
				started = append(started, l)
			case o.op + ": outage ended":
				ended = append(ended, l)
			case o.op:
				t.Errorf("a line per failed attempt: %+v", l)
			}
		}
		if len(started) != 1 || len(ended) != 1 {
			t.Errorf("%s: %d outage started and %d ended lines, want 1 and 1", o.op, len(started), len(ended))
			continue
		}
		if started[0].Err == "" || (started[0].Level != "ERROR" && started[0].Level != "WARN") {
			t.Errorf("%s: outage started %+v, want an error or a warning with the cause", o.op, started[0])
		}
		if ended[0].Level != "WARN" || ended[0].FailedAttempts < o.minFailures {
			t.Errorf("%s: outage ended %+v, want a warning counting at least %d failed attempts", o.op, ended[0], o.minFailures)
		}
	}
	// Nothing else logged an error per attempt while PostgreSQL was down.
	errors := 0
	for _, l := range all {
		if l.Level == "ERROR" {
			errors++
		}
	}
	if errors > 5 {
		t.Errorf("%d ERROR lines for one outage, want at most one per operation", errors)
	}
}
