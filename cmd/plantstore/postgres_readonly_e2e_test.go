package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestPostgresReadOnly: the database turns read-only under a running
// replica, as a primary demoted to a standby after a failover does (here
// default_transaction_read_only set on the database and its sessions
// ended). Writes answer 503 50301 with Retry-After (the log shows the
// server refused them: SQLSTATE 25006), reads still 200, /readyz 503 (the
// last write failed, and so does its probe write). Once the database takes
// writes again, /readyz is 200 again with no client write (its probe write
// succeeds), writes succeed, and no write answered 503 was stored.
func TestPostgresReadOnly(t *testing.T) {
	t.Parallel()
	const secret = "read-only-database-token-0123456789abcdef"
	db := pgtest.NewDatabase(t)
	// --log-level debug: failing /readyz probes are logged as an outage,
	// the first one at warning level and the next ones at debug level.
	s := launchServer(t, "plantstore serve", db, "--db-timeout", "3s", "--bootstrap-token", secret, "--rate-limit", "0",
		"--log-level", "debug")
	s.waitReady(t)
	admin := pgAdmin(t, db)
	mustCreate(t, s, secret, 1)
	checkReady(t, s, http.StatusOK)

	setDatabaseReadOnly(t, admin, true)
	// The first writes may meet a pooled connection whose session was
	// ended (503 50301 too); the next ones are refused as read-only.
	id, refused := 2, []int{}
	waitFor(t, 15*time.Second, "a POST /plants refused as read-only (SQLSTATE 25006)", func() bool {
		r := create(t, s, secret, id)
		checkUnavailable(t, fmt.Sprintf("POST /plants %d on a read-only database", id), r)
		logged := loggedError(t, s, "storage error", r)
		t.Logf("POST /plants %d: %s: %s", id, r, logged)
		refused = append(refused, id)
		id++
		return strings.Contains(logged, "SQLSTATE 25006")
	})
	waitFor(t, 15*time.Second, "GET /readyz to fail on the probe write", func() bool {
		r := get(t, s, "/readyz", "")
		checkUnavailable(t, "GET /readyz on a read-only database", r)
		logged := loggedError(t, s, "readyz: storage does not answer", r)
		t.Logf("GET /readyz: %s: %s", r, logged)
		return strings.Contains(logged, "the last write failed") && strings.Contains(logged, "a probe write failed too") &&
			strings.Contains(logged, "SQLSTATE 25006")
	})
	checkUnavailable(t, "GET /readyz again", get(t, s, "/readyz", ""))
	waitFor(t, 15*time.Second, "GET /plants/1 on a read-only database", func() bool {
		r := get(t, s, "/plants/1", secret)
		if r.status != http.StatusOK {
			checkUnavailable(t, "GET /plants/1 on a read-only database", r)
		}
		return r.status == http.StatusOK
	})
	checkUnavailable(t, "GET /readyz after a read", get(t, s, "/readyz", ""))

	setDatabaseReadOnly(t, admin, false)
	waitStatus(t, s, "/readyz", http.StatusOK)
	waitFor(t, 15*time.Second, "POST /plants once the database takes writes again", func() bool {
		r := create(t, s, secret, id)
		if r.status != http.StatusOK {
			checkUnavailable(t, fmt.Sprintf("POST /plants %d after the reset", id), r)
		}
		return r.status == http.StatusOK
	})
	checkReady(t, s, http.StatusOK)
	for _, want := range []struct {
		id     int
		status int
	}{{1, http.StatusOK}, {id, http.StatusOK}} {
		if r := get(t, s, fmt.Sprintf("/plants/%d", want.id), secret); r.status != want.status {
			t.Fatalf("GET /plants/%d: %s, want %d", want.id, r, want.status)
		}
	}
	for _, id := range refused {
		if r := get(t, s, fmt.Sprintf("/plants/%d", id), secret); r.status != http.StatusNotFound {
			t.Fatalf("GET /plants/%d, whose create was answered 503: %s, want 404", id, r)
		}
	}
}

// loggedError waits (at most 5 s) for the server's log line msg of the
// request that got r (by its X-Request-Id) and returns its err field.
func loggedError(t *testing.T, s *server, msg string, r response) string {
	t.Helper()
	id := r.header.Get("X-Request-Id")
	if id == "" {
		t.Fatalf("%s: no X-Request-Id", r)
	}
	var found string
	waitFor(t, 5*time.Second, fmt.Sprintf("a %q log line of request %s", msg, id), func() bool {
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			var l struct {
				Msg       string `json:"msg"`
				RequestID string `json:"request_id"`
				Err       string `json:"err"`
			}
			// msg, or msg's outage lines ("msg: outage started", "msg:
			// failed again").
			if json.Unmarshal([]byte(line), &l) == nil && (l.Msg == msg || strings.HasPrefix(l.Msg, msg+": ")) && l.RequestID == id {
				found = l.Err
				return true
			}
		}
		return false
	})
	return found
}

// pgAdmin opens a connection of its own to the database at url, closed when
// t ends: its session keeps the settings it started with.
func pgAdmin(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// setDatabaseReadOnly sets (or resets) default_transaction_read_only on the
// database of admin, ends every other session on it, and waits until those
// sessions are gone: the server's pool then reconnects with the setting.
func setDatabaseReadOnly(t *testing.T, admin *pgx.Conn, on bool) {
	t.Helper()
	ctx := t.Context()
	var name string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	stmt := `ALTER DATABASE ` + pgx.Identifier{name}.Sanitize() + ` RESET default_transaction_read_only`
	if on {
		stmt = `ALTER DATABASE ` + pgx.Identifier{name}.Sanitize() + ` SET default_transaction_read_only = on`
	}
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	// Sessions that started before the change have the old setting; the
	// server's pool may open new ones meanwhile, which have the new one.
	var changed time.Time
	if err := admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&changed); err != nil {
		t.Fatal(err)
	}
	const older = `FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
	AND backend_type = 'client backend' AND backend_start < $1`
	// Terminated again on each look: a session still starting when the
	// change was made shows its database only once it has authenticated,
	// after an earlier look may have missed it.
	waitFor(t, 10*time.Second, "the sessions older than the change to end", func() bool {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) `+older, changed).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}
