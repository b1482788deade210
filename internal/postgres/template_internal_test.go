package postgres

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// migrated is the database that NewMigratedDatabase copies: created and
// migrated on pgtest's shared server by the first call, kept until the
// test binary ends.
var migrated struct {
	mu       sync.Mutex
	adminURL string // where the copies are created and dropped
	name     string
	err      error
}

// NewMigratedDatabase returns the URL of a new database on pgtest's shared
// server that holds the current schema, dropped when tb ends. It is a copy
// (CREATE DATABASE ... TEMPLATE) of a database migrated once per test
// binary: a copy costs less than creating an empty database and migrating
// it, which the tests of the migrations themselves still do (from
// pgtest.NewDatabase). Opening it with OpenMigrated still runs Migrate,
// which finds nothing to apply.
func NewMigratedDatabase(tb testing.TB) string {
	tb.Helper()
	if err := ensureTemplate(tb); err != nil {
		tb.Fatalf("migrated template database: %v", err)
	}
	name := randomName("plantstore_test_")
	if err := copyTemplate(migrated.adminURL, name, migrated.name); err != nil {
		tb.Fatalf("copy the migrated template database: %v", err)
	}
	tb.Cleanup(func() {
		if err := dropDatabase(migrated.adminURL, name); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	return withDatabase(migrated.adminURL, name)
}

// ensureTemplate creates the template on the first call. Where PostgreSQL
// is missing, pgtest.NewDatabase skips tb (or fails it), and the next call
// tries again.
func ensureTemplate(tb testing.TB) error {
	migrated.mu.Lock()
	defer migrated.mu.Unlock()
	if migrated.name == "" && migrated.err == nil {
		migrated.err = createTemplate(pgtest.NewDatabase(tb))
	}
	return migrated.err
}

// createTemplate creates and migrates the template database on the server
// of some, a database URL of pgtest's. Its statements run on the server's
// postgres database, or on the database that PLANTSTORE_TEST_POSTGRES_URL
// names when it is set.
func createTemplate(some string) error {
	admin := os.Getenv(pgtest.EnvURL)
	if admin == "" {
		admin = withDatabase(some, "postgres")
	}
	name := randomName("plantstore_template_")
	if err := adminExec(admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	migrated.adminURL, migrated.name = admin, name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := NewDB(withDatabase(admin, name))
	err := db.Open(ctx)
	if err == nil {
		_, err = db.Migrate(ctx)
	}
	db.Close()
	return err
}

// copyTemplate creates database name as a copy of template. FILE_COPY
// copies the files (cheap: the test servers do not fsync) instead of
// writing every page into the WAL; a server older than PostgreSQL 15 knows
// no STRATEGY and copies files anyway.
func copyTemplate(adminURL, name, template string) error {
	q := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	err := adminExec(adminURL, q+" STRATEGY FILE_COPY")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42601" { // syntax_error: an older server
		err = adminExec(adminURL, q)
	}
	return err
}

// dropTemplate drops the template database from a server named by
// PLANTSTORE_TEST_POSTGRES_URL, which outlives the tests; pgtest's own
// cluster is gone with its directory by then.
func dropTemplate() {
	if migrated.name == "" || os.Getenv(pgtest.EnvURL) == "" {
		return
	}
	if err := dropDatabase(migrated.adminURL, migrated.name); err != nil {
		fmt.Fprintf(os.Stderr, "drop the template database %s: %v\n", migrated.name, err)
	}
}

// dropDatabase drops database name, terminating the connections a test
// left open (WITH (FORCE), PostgreSQL 13 and later).
func dropDatabase(adminURL, name string) error {
	q := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
	err := adminExec(adminURL, q+" WITH (FORCE)")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42601" { // syntax_error: an older server
		err = adminExec(adminURL, q)
	}
	return err
}

// randomName returns prefix followed by 16 random hexadecimal digits.
func randomName(prefix string) string {
	return prefix + hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, rand.Uint64()))
}

// withDatabase returns the postgres:// URL dbURL with its database
// replaced by name.
func withDatabase(dbURL, name string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		panic(err) // pgtest's URLs parse
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}

// adminExec runs one statement on a connection of its own to adminURL.
func adminExec(adminURL, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
