package pgtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(envLeftovers) != "" {
		if err := startLeftovers(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(pgtest.Run(m))
}

// connect opens a connection to url, bounded so a broken server fails the
// test instead of hanging it.
func connect(t *testing.T, url string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, nil
}

func mustConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := connect(t, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	return conn
}

func queryString(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestNewDatabase(t *testing.T) {
	urlA, urlB := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if urlA == urlB {
		t.Fatalf("two calls returned the same URL %s", urlA)
	}
	a, b := mustConnect(t, urlA), mustConnect(t, urlB)
	nameA := queryString(t, a, `SELECT current_database()`)
	nameB := queryString(t, b, `SELECT current_database()`)
	if nameA == nameB {
		t.Fatalf("both URLs lead to database %s", nameA)
	}

	// Each is empty, and what one holds the other does not.
	for _, conn := range []*pgx.Conn{a, b} {
		if got, want := queryString(t, conn, `SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public'`), "0"; got != want {
			t.Fatalf("a new database has %s tables, want %s", got, want)
		}
	}
	exec(t, a, `CREATE TABLE t (x int)`)
	if got, want := queryString(t, b, `SELECT count(*)::text FROM pg_tables WHERE tablename = 't'`), "0"; got != want {
		t.Fatalf("a table created in one database shows in the other: %s tables, want %s", got, want)
	}
}

func TestNewDatabaseDropped(t *testing.T) {
	var name string
	var left *pgx.Conn
	defer func() {
		if left != nil {
			left.Close(context.Background())
		}
	}()
	t.Run("Use", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		// Left open when the test ends: the drop terminates it.
		if left, err = pgx.Connect(ctx, pgtest.NewDatabase(t)); err != nil {
			t.Fatal(err)
		}
		if err := left.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	if name == "" {
		t.Fatal("subtest failed")
	}
	conn := mustConnect(t, pgtest.NewDatabase(t))
	if got, want := queryString(t, conn, `SELECT count(*)::text FROM pg_database WHERE datname = $1`, name), "0"; got != want {
		t.Fatalf("database %s still exists after its test: count %s, want %s", name, got, want)
	}
}

func TestStartCluster(t *testing.T) {
	c := pgtest.StartCluster(t)
	mustConnect(t, c.URL(""))
	url := c.CreateDatabase(t, "restart")
	if got, want := url, c.URL("restart"); got != want {
		t.Fatalf("CreateDatabase URL = %s, want %s", got, want)
	}
	exec(t, mustConnect(t, url), `CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)`)

	c.Stop(t)
	if conn, err := connect(t, url); err == nil {
		conn.Close(context.Background())
		t.Fatal("connect to a stopped cluster succeeded")
	}

	c.Start(t)
	conn := mustConnect(t, url)
	if got, want := queryString(t, conn, `SELECT x::text FROM kept`), "42"; got != want {
		t.Fatalf("after restart: x = %s, want %s", got, want)
	}
}

// The settings of test clusters trade durability for speed; StartCluster
// gives a server of its own.
func TestClusterSettings(t *testing.T) {
	c := pgtest.StartCluster(t)
	own := mustConnect(t, c.URL(""))
	if got, want := queryString(t, own, `SHOW fsync`), "off"; got != want {
		t.Fatalf("fsync = %s, want %s", got, want)
	}
	if os.Getenv(pgtest.EnvURL) != "" {
		return
	}
	shared := mustConnect(t, pgtest.NewDatabase(t))
	if got, notWant := queryString(t, shared, `SHOW port`), queryString(t, own, `SHOW port`); got == notWant {
		t.Fatalf("StartCluster and the shared cluster both use port %s", got)
	}
	if got, want := queryString(t, shared, `SHOW max_connections`), "200"; got != want {
		t.Fatalf("max_connections = %s, want %s", got, want)
	}
}

// TestPgBouncer: the test pooler serves a database of its server, in
// transaction pooling mode with the stock ignore_startup_parameters: a
// client that sends statement_timeout in its startup packet is refused
// (FATAL 08P01), as a connection that sets its timeouts at startup would be.
func TestPgBouncer(t *testing.T) {
	db := pgtest.NewDatabase(t)
	b := pgtest.StartPgBouncer(t, db, pgtest.PgBouncerOptions{PoolSize: 1})
	url := b.Via(t, db)
	conn := mustConnect(t, url+"&default_query_exec_mode=simple_protocol")
	if got := queryString(t, conn, `SELECT current_database()`); !strings.HasSuffix(db, "/"+got+"?sslmode=disable") {
		t.Fatalf("current_database() through the pooler = %q, want the database of %s", got, db)
	}
	_, err := connect(t, url+"&statement_timeout=5000")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "08P01" || !strings.Contains(pgErr.Message, "unsupported startup parameter") {
		t.Fatalf("connect with a statement_timeout startup parameter: err = %v, want FATAL 08P01 unsupported startup parameter", err)
	}
	b.Stop(t)
	if _, err := connect(t, url); err == nil {
		t.Fatal("connected through a stopped pooler")
	}
	b.Start(t)
	conn = mustConnect(t, url+"&default_query_exec_mode=simple_protocol")
	exec(t, conn, `SELECT 1`)
}
