package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// The committer's own statements (transaction control, the plant and event
// writes, the fan-out and the checks around them) run on the driver
// connection under database/sql's one write connection, not through
// database/sql: each is prepared once per connection and reused by every
// batch after, its arguments go in a reused buffer, bound, and the first
// step taken, in one cgo call (the driver's fused Query path), and BEGIN
// and COMMIT are statements like the others, not SQL parsed again per
// batch. database/sql would cost, per statement, a Stmt for the
// transaction, a conversion of every argument and a result, and per batch
// a Tx with a goroutine and a context (measured in BenchmarkCommit and in
// the profiles of docs/performance.md). Generic writes (DB.update) keep
// database/sql: they run through the same connection (Tx is a *sql.Conn),
// inside the transaction the committer began, and the driver caches their
// statements by text (_stmt_cache_size on the write DSN).

// writer is the committer's state on the write connection; only the
// committer uses it, inside database/sql's Conn.Raw.
type writer struct {
	conn  driver.Conn            // the driver connection the statements belong to
	stmts map[string]driver.Stmt // prepared on conn, kept until it changes or Close
	args  []driver.NamedValue    // a statement's arguments (reused)
	row   []driver.Value         // a row being read (reused)

	// The last owner and tag vals boxed, and their boxes.
	owner, tag   string
	ownerV, tagV driver.Value
}

// Transaction control, prepared once like every statement of the writer.
const (
	qBegin    = `BEGIN IMMEDIATE` // the write lock at once: a batch never upgrades from a read
	qCommit   = `COMMIT`
	qRollback = `ROLLBACK`
)

// raw runs f with the writer on conn's driver connection (database/sql's
// Conn.Raw: f must not use conn itself). The statements are prepared again
// when database/sql gave a new connection (it does not close the write
// connection of an open DB, but nothing here depends on that).
func (db *DB) raw(conn *sql.Conn, f func(w *writer) error) error {
	return conn.Raw(func(dc any) error {
		w := &db.writer
		if c, ok := dc.(driver.Conn); ok && c != w.conn {
			w.closeStmts()
			w.conn = c
		}
		return f(w)
	})
}

// closeStmts closes the prepared statements (they belong to w.conn).
func (w *writer) closeStmts() error {
	var errs []error
	for q, st := range w.stmts {
		errs = append(errs, st.Close())
		delete(w.stmts, q)
	}
	return errors.Join(errs...)
}

// stmt returns query prepared on w.conn.
func (w *writer) stmt(query string) (driver.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	if w.conn == nil {
		return nil, errors.New("sqlite: no write connection")
	}
	st, err := w.conn.Prepare(query)
	if err != nil {
		return nil, err
	}
	if _, ok := st.(driver.StmtQueryContext); !ok {
		st.Close()
		return nil, fmt.Errorf("sqlite: driver statement %T cannot query", st)
	}
	if w.stmts == nil {
		w.stmts = make(map[string]driver.Stmt)
	}
	w.stmts[query] = st
	return st, nil
}

// reset empties the argument buffer, for the next statement's arguments.
func (w *writer) reset() { w.args = w.args[:0] }

// arg appends one argument (its ordinal is its position).
func (w *writer) arg(v driver.Value) {
	w.args = append(w.args, driver.NamedValue{Ordinal: len(w.args) + 1, Value: v})
}

// rows runs query with the arguments in w.args and returns its rows, which
// the caller must close. The statement's first step has run when it
// returns: a write has been applied (and its RETURNING rows are ready).
func (w *writer) rows(query string) (driver.Rows, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtQueryContext).QueryContext(context.Background(), w.args)
}

// exec runs query with the arguments in w.args, for its effect.
func (w *writer) exec(query string) error {
	rows, err := w.rows(query)
	if err != nil {
		return err
	}
	return rows.Close()
}

// execN runs query with the arguments in w.args and returns how many rows
// it changed (the driver's Exec path: one cgo call per argument, where the
// Query path binds them all in one; for statements that need the count).
func (w *writer) execN(query string) (int64, error) {
	st, err := w.stmt(query)
	if err != nil {
		return 0, err
	}
	ex, ok := st.(driver.StmtExecContext)
	if !ok {
		return 0, fmt.Errorf("sqlite: driver statement %T cannot exec", st)
	}
	res, err := ex.ExecContext(context.Background(), w.args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// next reads the next row of rows into w.row (sized to the row); io.EOF
// after the last.
func (w *writer) next(rows driver.Rows) ([]driver.Value, error) {
	n := len(rows.Columns())
	if cap(w.row) < n {
		w.row = make([]driver.Value, n)
	}
	w.row = w.row[:n]
	if err := rows.Next(w.row); err != nil {
		return nil, err
	}
	return w.row, nil
}

// one runs query with the arguments in w.args and returns its first row
// (valid until the writer's next statement); sql.ErrNoRows when it has
// none.
func (w *writer) one(query string) ([]driver.Value, error) {
	rows, err := w.rows(query)
	if err != nil {
		return nil, err
	}
	row, err := w.next(rows)
	if err == io.EOF {
		err = sql.ErrNoRows
	}
	return row, errors.Join(err, rows.Close())
}

// int64Of reads an integer column.
func int64Of(v driver.Value) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("sqlite: integer column holds %T", v)
	}
	return n, nil
}

// autoCommit reports whether w.conn is outside a transaction (a generic
// write ended the batch's: txLost). ok is false when the driver cannot
// tell.
func (w *writer) autoCommit() (auto, ok bool) {
	if c, ok := w.conn.(interface{ AutoCommit() bool }); ok {
		return c.AutoCommit(), true
	}
	return false, false
}

// begin begins the batch's transaction.
func (w *writer) begin() error {
	w.reset()
	return w.exec(qBegin)
}

// commit commits the batch's transaction. A COMMIT that fails may leave
// the transaction open (SQLITE_BUSY): it is rolled back, so that the
// connection is outside a transaction either way (as database/sql's Tx
// expects of the driver).
func (w *writer) commit() error {
	w.reset()
	err := w.exec(qCommit)
	if err != nil {
		w.rollback()
	}
	return err
}

// rollback rolls the batch's transaction back; an error (no transaction
// is active: a write ended it, or COMMIT did) is of no use to anyone.
func (w *writer) rollback() error {
	w.reset()
	w.exec(qRollback)
	return nil
}

// closeWriter closes the writer's statements, on the write connection
// (Close, once the committer has stopped).
func (db *DB) closeWriter() error {
	if len(db.writer.stmts) == 0 {
		return nil
	}
	conn, err := db.write.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	return db.raw(conn, (*writer).closeStmts)
}
