package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Failover. When the primary goes away (a crash, a switchover
// that restarts it as a standby) every pooled connection to it is
// useless: each would fail one call of its own, or, to a server that
// turned read-only, fail every write. So the first error that says the
// server is gone or read-only (serverGone) drops every pooled connection
// at once (pool.Reset: idle ones now, those in use when they come back);
// the next connection goes through the URL's hosts again, and with
// target_session_attrs=read-write it lands on the new primary. The calls
// caught in the switch fail with plantstore.ErrUnavailable (503, see
// wrap); their writes follow the commit-outcome rule (outcome.go).
//
// dropTracer watches every statement of the pool (pgx calls it for each
// query, batch and copy, on any connection, migrations included).

// serverGone reports errors that say the server of a connection is gone,
// going, or cannot take writes: a lost connection (connectionLost), or
// SQLSTATE serverGoneCode or 25006 (read_only_sql_transaction: a standby,
// such as a demoted primary behind a pooler).
func serverGone(err error) bool {
	if code := pgCode(err); code != "" {
		return serverGoneCode(code) || code == codeReadOnlyTransaction
	}
	return connectionLost(err)
}

// serverGoneCode reports the SQLSTATEs of a connection or server that goes
// away: class 08 (connection exception, also what PgBouncer sends for a
// lost server connection), 57P01 admin_shutdown (a fast shutdown, a
// terminated backend), 57P02 crash_shutdown, 57P03 cannot_connect_now
// (starting up, or shutting down).
func serverGoneCode(code string) bool {
	switch {
	case len(code) == 5 && code[:2] == "08":
		return true
	case code == "57P01", code == "57P02", code == "57P03":
		return true
	}
	return false
}

// connectionLost reports a connection that broke under a call: closed by
// the other end (EOF, a reset, a broken pipe) or otherwise failing, not
// a timeout (which says nothing of the server: a slow statement, a lock
// wait) nor the caller's cancellation.
func connectionLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && !netErr.Timeout()
}

// dropConns drops every pooled connection when err, the error of a
// statement on c, says the server is gone or read-only, unless c was made
// before the last drop (it goes anyway when it comes back to the pool:
// the news is old), and calls OnDropConns.
func (db *DB) dropConns(c *pgconn.PgConn, err error) {
	if err == nil || !serverGone(err) {
		return
	}
	last := db.dropped.Load()
	if c != nil && stateOf(c).born.UnixNano() <= last {
		return
	}
	if !db.dropped.CompareAndSwap(last, time.Now().UnixNano()) {
		return // another statement is dropping them
	}
	db.pool.Reset()
	if db.OnDropConns != nil {
		db.OnDropConns(redact(err))
	}
}

// dropTracer is the pool's pgx tracer: it passes each statement's error
// to dropConns.
type dropTracer struct{ db *DB }

var (
	_ pgx.QueryTracer    = dropTracer{}
	_ pgx.BatchTracer    = dropTracer{}
	_ pgx.CopyFromTracer = dropTracer{}
)

func (t dropTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (t dropTracer) TraceQueryEnd(_ context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	t.db.dropConns(c.PgConn(), d.Err)
}

func (t dropTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t dropTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t dropTracer) TraceBatchEnd(_ context.Context, c *pgx.Conn, d pgx.TraceBatchEndData) {
	t.db.dropConns(c.PgConn(), d.Err)
}

func (t dropTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

func (t dropTracer) TraceCopyFromEnd(_ context.Context, c *pgx.Conn, d pgx.TraceCopyFromEndData) {
	t.db.dropConns(c.PgConn(), d.Err)
}
