package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
)

// TestUnavailable_Codes: the SQLSTATEs of a server that cannot serve or
// cannot write (read-only, disk full, I/O error, connection lost) are
// ErrUnavailable and latch the write failure for Ping; a statement timeout,
// the call's timeout and the store closing are ErrUnavailable but latch
// nothing; the caller's cancellation and the statement's own errors are
// neither.
func TestUnavailable_Codes(t *testing.T) {
	t.Parallel()
	pgErr := func(code string) error {
		return fmt.Errorf("wrapped: %w", &pgconn.PgError{Severity: "ERROR", Code: code, Message: "test"})
	}
	for _, tt := range []struct {
		name               string
		err                error
		unavailable, latch bool
	}{
		{"ReadOnly25006", pgErr("25006"), true, true},
		{"DiskFull53100", pgErr("53100"), true, true},
		{"TooManyConnections53300", pgErr("53300"), true, true},
		{"IOError58030", pgErr("58030"), true, true},
		{"SystemError58000", pgErr("58000"), true, true},
		{"UndefinedFile58P01", pgErr("58P01"), true, true},
		{"ConnectionFailure08006", pgErr("08006"), true, true},
		{"AdminShutdown57P01", pgErr("57P01"), true, true},
		{"CannotConnectNow57P03", pgErr("57P03"), true, true},
		{"StatementTimeout57014", pgErr("57014"), true, false},
		{"UniqueViolation23505", pgErr("23505"), false, false},
		{"SerializationFailure40001", pgErr("40001"), false, false},
		{"OtherInvalidTransactionState25P02", pgErr("25P02"), false, false},
		{"ConnectionReset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true, true},
		{"OpTimeout", fmt.Errorf("wrapped: %w", context.DeadlineExceeded), true, false},
		{"CallerCanceled", fmt.Errorf("wrapped: %w", context.Canceled), false, false},
		{"Closed", groupcommit.ErrClosed, true, false},
		{"Other", errors.New("bad row"), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := unavailable(tt.err); got != tt.unavailable {
				t.Errorf("unavailable(%v) = %v, want %v", tt.err, got, tt.unavailable)
			}
			if got := errors.Is(wrap("op", tt.err), plantstore.ErrUnavailable); got != tt.unavailable {
				t.Errorf("wrap(%v) is ErrUnavailable: %v, want %v", tt.err, got, tt.unavailable)
			}
			if got := writeFault(tt.err); got != tt.latch {
				t.Errorf("writeFault(%v) = %v, want %v", tt.err, got, tt.latch)
			}
		})
	}
}

// TestReadOnly: the database turns read-only under the store (as a primary
// demoted to a standby after a failover; here default_transaction_read_only
// set on the database and its sessions ended, so that the pool reconnects
// with it). Every kind of write fails with ErrUnavailable (SQLSTATE 25006),
// reads still serve, and Ping fails at once: the last write failed; once
// no write came for readyFresh (the test's clock), Ping probes with a
// write, which fails too. Once the database takes writes again, Ping
// succeeds with no other write (its probe clears the failure) and leaves
// nothing behind, and writes succeed; a write that succeeds clears the
// failure too.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	db.OpTimeout = 5 * time.Second
	clock := newTestClock().set(&db.ready)
	admin := adminConn(t, db.URL)
	ctx := t.Context()
	fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	mustInsert(t, db, fern)
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping before: %v", err)
	}

	setReadOnly(t, db, admin, true)
	ivy := &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow}
	writes := []struct {
		name  string
		write func() error
	}{
		{"InsertPlant", func() error { _, _, err := insert3(db.InsertPlant(ctx, ivy, event(t, ivy))); return err }},
		{"DeletePlant", func() error { return errOnly(db.DeletePlant(ctx, "alice", 1, nil)) }},
		{"BulkInsertPlants", func() error { _, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{ivy}); return err }},
		{"InsertToken", func() error { return db.InsertToken(ctx, newTestToken(t)) }},
		{"InsertSubscription", func() error {
			return db.InsertSubscription(ctx, &plantstore.Subscription{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9",
				Secret: "whsec_1", CreatedAt: fixedNow}, plantstore.DefaultMaxSubscriptions)
		}},
	}
	for _, w := range writes {
		err := w.write()
		if !errors.Is(err, plantstore.ErrUnavailable) || pgCode(err) != codeReadOnlyTransaction {
			t.Fatalf("%s on a read-only database: err = %v, want ErrUnavailable with SQLSTATE 25006", w.name, err)
		}
		if db.ready.err() == nil {
			t.Fatalf("%s failed for the storage, but no failure is recorded", w.name)
		}
	}
	if got, err := db.FindPlant(ctx, "alice", 1); err != nil || !got.SameContent(fern) {
		t.Fatalf("FindPlant on a read-only database: %+v, %v; want %+v", got, err, fern)
	}
	// A read that succeeds clears nothing.
	if err := db.Ping(ctx); !errors.Is(err, plantstore.ErrUnavailable) || !errors.Is(err, errWriteFailed) ||
		pgCode(err) != codeReadOnlyTransaction || strings.Contains(err.Error(), "probe write") {
		t.Fatalf("Ping right after the failed writes: err = %v, want ErrUnavailable: the last write failed (no probe)", err)
	}
	for range 2 { // nor does the failed probe
		clock.Advance(readyFresh)
		err := db.Ping(ctx)
		if !errors.Is(err, plantstore.ErrUnavailable) || !errors.Is(err, errWriteFailed) ||
			pgCode(err) != codeReadOnlyTransaction || !strings.Contains(err.Error(), "probe write failed") {
			t.Fatalf("Ping on an idle read-only database: err = %v, want ErrUnavailable: the last write failed, and the probe", err)
		}
	}

	setReadOnly(t, db, admin, false)
	clock.Advance(readyFresh)
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping once the database takes writes again: %v", err)
	}
	if db.ready.err() != nil {
		t.Fatal("the probe write of Ping succeeded, but the failure is still recorded")
	}
	var probes int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM webhook_owners`).Scan(&probes); err != nil || probes != 0 {
		t.Fatalf("webhook_owners has %d rows (%v) after the probe, want none", probes, err)
	}
	if existing, _, err := insert3(db.InsertPlant(ctx, ivy, event(t, ivy))); err != nil || existing != nil {
		t.Fatalf("InsertPlant once the database takes writes again: %+v, %v", existing, err)
	}
	for _, p := range []*plantstore.Plant{fern, ivy} {
		if got, err := db.FindPlant(ctx, p.Owner, p.ID); err != nil || !got.SameContent(p) {
			t.Fatalf("FindPlant(%d): %+v, %v; want %+v", p.ID, got, err, p)
		}
	}

	// A write that succeeds clears the failure as well, before any Ping.
	setReadOnly(t, db, admin, true)
	if err := errOnly(db.DeletePlant(ctx, "alice", 2, nil)); pgCode(err) != codeReadOnlyTransaction {
		t.Fatalf("DeletePlant on a read-only database: err = %v, want SQLSTATE 25006", err)
	}
	setReadOnly(t, db, admin, false)
	if err := errOnly(db.DeletePlant(ctx, "alice", 2, nil)); err != nil {
		t.Fatalf("DeletePlant once the database takes writes again: %v", err)
	}
	if db.ready.err() != nil {
		t.Fatal("a write succeeded, but the failure is still recorded")
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping right after a write succeeded: %v", err)
	}
}

// A write given up by its caller (its context canceled) records no
// failure of the storage.
func TestReadOnly_CallerCanceled(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	if _, _, err := insert3(db.InsertPlant(ctx, p, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("InsertPlant with a canceled context: err = %v, want context.Canceled", err)
	}
	if _, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{p}); err == nil {
		t.Fatal("BulkInsertPlants with a canceled context succeeded")
	}
	if last := db.ready.err(); last != nil {
		t.Fatalf("a canceled write recorded a failure: %v", last)
	}
	if err := db.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func newTestToken(t *testing.T) *plantstore.Token {
	t.Helper()
	tok, _, err := plantstore.NewToken("alice", nil, 0, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// adminConn opens a connection of its own to the database at url, closed
// when t ends: its session keeps the settings it started with.
func adminConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// setReadOnly sets (or resets) default_transaction_read_only on the
// database of admin, ends every other session on it, waits until they are
// gone, and drops the pool's connections (which the server closed), so
// that the next call of db opens a connection with the new setting.
func setReadOnly(t *testing.T, db *DB, admin *pgx.Conn, on bool) {
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
	const others = `FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) `+others); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the database's other sessions to end", func() bool {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) `+others).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	db.pool.Reset()
}
