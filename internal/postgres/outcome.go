package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The commit-outcome rule: a write is acknowledged only when
// its COMMIT is known to have taken effect, and redone only when its
// transaction is known to have committed nothing.
//
// A COMMIT's outcome is unknown when the error came after the COMMIT may
// have reached the server (the connection lost, a timeout, a pooler's
// error for a lost server connection: the server may have committed
// without telling), or when the COMMIT returned but the server warned while
// it ran: PostgreSQL commits locally first, then waits for the synchronous
// standby, and a wait that is cancelled (pg_cancel_backend, a terminated
// backend) ends with a WARNING "canceling wait for synchronous
// replication": committed here, maybe on no standby, so maybe lost in a
// failover. Such a write fails with outcomeUnknownError, which is
// plantstore.ErrUnavailable (503, Retry-After: the client retries; a
// create is idempotent, and its retry finds the row or writes it), and is
// never redone by the store: redoing a create that did commit would read
// its row back and answer 200 on the strength of that read alone.
//
// A transaction is known to have committed nothing (notCommittedError)
// when nothing of it was sent, when the error came before its COMMIT was
// sent, or when the server refused one of its statements with an error of
// the statement (a constraint, a serialization failure, a timeout: the
// server then skips the rest, COMMIT included): only then may its writes
// run again.
//
// A create answered from the row that has its key (a replay) is likewise
// confirmed by a commit that follows the read on the same server (see
// qConfirm in batch.go): under synchronous replication that commit returns
// only once the standby has the WAL up to it, which holds the row's.

// outcomeUnknownError is the error of a write whose COMMIT may or may not
// have taken effect. It matches plantstore.ErrUnavailable.
type outcomeUnknownError struct {
	cause   error          // the error after the COMMIT may have been sent; nil with warning
	warning *pgconn.Notice // the server's warning while the COMMIT ran
}

func (e *outcomeUnknownError) Error() string {
	if e.warning != nil {
		return fmt.Sprintf("the outcome of the commit is unknown: the server warned %q (%s)", e.warning.Message, e.warning.Detail)
	}
	return fmt.Sprintf("the outcome of the commit is unknown: %v", e.cause)
}

func (e *outcomeUnknownError) Unwrap() error { return e.cause }

// notCommittedError is the error of a transaction known to have committed
// nothing: its writes may run again.
type notCommittedError struct{ err error }

func (e *notCommittedError) Error() string { return e.err.Error() }
func (e *notCommittedError) Unwrap() error { return e.err }

// committedNothing reports whether err, the error of a transaction, proves
// that nothing of it was committed.
func committedNothing(err error) bool {
	var nc *notCommittedError
	return errors.As(err, &nc)
}

// outcomeUnknown reports whether err is the error of a write whose commit
// may have taken effect.
func outcomeUnknown(err error) bool {
	var u *outcomeUnknownError
	return errors.As(err, &u)
}

// commitError classifies err, the error of a transaction whose COMMIT may
// have been sent (sent: the statements, COMMIT included, went out in one
// pipeline, or err is COMMIT's own): a server's refusal of a statement, or
// nothing sent at all, proves that nothing was committed; anything else
// leaves the outcome unknown.
func commitError(err error) error {
	switch {
	case err == nil:
		return nil
	case pgconn.SafeToRetry(err), statementRefused(err), errors.Is(err, pgx.ErrTxCommitRollback):
		return &notCommittedError{err}
	}
	return &outcomeUnknownError{cause: err}
}

// statementRefused reports a server error of a statement, after which the
// server rolls its transaction back: any SQLSTATE but those of a
// connection or server that goes away (serverGoneCode), which a pooler
// also sends when it loses the server connection, maybe after the server
// committed.
func statementRefused(err error) bool {
	code := pgCode(err)
	return code != "" && !serverGoneCode(code)
}

// connState is what the store keeps per connection (in its CustomData).
type connState struct {
	born    time.Time      // when it was made (see failover.go)
	warning *pgconn.Notice // the last WARNING the server sent since cleared
}

// connStateKey is the key of connState in a connection's CustomData.
const connStateKey = "plantstore.conn"

// stateOf returns c's connState, made on first use.
func stateOf(c *pgconn.PgConn) *connState {
	data := c.CustomData()
	st, _ := data[connStateKey].(*connState)
	if st == nil {
		st = &connState{}
		data[connStateKey] = st
	}
	return st
}

// noteWarning is the connections' OnNotice: it keeps the last WARNING (of
// any text: the server's messages may be translated), for onConn. It runs
// on the goroutine that reads the connection, which is the one using it.
func noteWarning(c *pgconn.PgConn, n *pgconn.Notice) {
	sev := n.SeverityUnlocalized
	if sev == "" {
		sev = n.Severity
	}
	if sev == "WARNING" {
		stateOf(c).warning = n
	}
}

// onConn runs fn on a connection of the pool. For a write (write), a
// WARNING the server sent while fn ran fails the write with
// outcomeUnknownError even when fn succeeded: its COMMIT's wait for the
// synchronous standby was cancelled (see above). An error before fn (no
// connection) is a notCommittedError.
func (db *DB) onConn(ctx context.Context, write bool, fn func(c *pgx.Conn) error) error {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return &notCommittedError{err}
	}
	defer c.Release()
	st := stateOf(c.Conn().PgConn())
	st.warning = nil
	err = fn(c.Conn())
	if write && err == nil && st.warning != nil {
		err = &outcomeUnknownError{warning: st.warning}
	}
	return err
}
