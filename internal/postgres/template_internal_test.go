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
	shape    string // the template's fingerprint (see shapeQuery)
	err      error
	free     []*copyDB // copies that tests finished with, emptied and unchanged
	admin    *pgx.Conn // on adminURL, kept open; under adminMu
	adminMu  sync.Mutex
}

// copyDB is a copy of the template and the session that empties it after
// each test.
type copyDB struct {
	name string
	conn *pgx.Conn // nil, or broken, until a recycle (re)opens it
}

// NewMigratedDatabase returns the URL of a database on pgtest's shared
// server that holds the current schema and no rows, for tb alone. It is a
// copy (CREATE DATABASE ... TEMPLATE) of a database migrated once per test
// binary, or a copy that an earlier test finished with: when tb ends, its
// sessions are ended and its tables emptied, and it is kept for the next
// test if its schema and settings are still the template's (dropped
// otherwise). Each copy keeps one idle session of its own for that, and the
// copies share one session on the server's postgres database: on this
// machine a new PostgreSQL session costs ~40 ms of CPU (a forked backend
// and its cold caches), and a copy of the template more (every file
// written, two checkpoints), while emptying a few small tables costs a
// few milliseconds. The tests of the migrations themselves still create
// empty databases (pgtest.NewDatabase). Opening it with OpenMigrated still
// runs Migrate, which finds nothing to apply.
func NewMigratedDatabase(tb testing.TB) string {
	tb.Helper()
	if err := ensureTemplate(tb); err != nil {
		tb.Fatalf("migrated template database: %v", err)
	}
	db := takeFree()
	if db == nil {
		db = &copyDB{name: randomName("plantstore_test_")}
		if err := copyTemplate(migrated.adminURL, db.name, migrated.name); err != nil {
			tb.Fatalf("copy the migrated template database: %v", err)
		}
	}
	tb.Cleanup(func() {
		if err := recycle(db); err != nil {
			tb.Logf("database %s is not reused: %v", db.name, err)
			if db.conn != nil {
				db.conn.Close(context.Background())
			}
			if err := dropDatabase(migrated.adminURL, db.name); err != nil {
				tb.Errorf("drop database %s: %v", db.name, err)
			}
		}
	})
	return withDatabase(migrated.adminURL, db.name)
}

func takeFree() *copyDB {
	migrated.mu.Lock()
	defer migrated.mu.Unlock()
	n := len(migrated.free)
	if n == 0 {
		return nil
	}
	db := migrated.free[n-1]
	migrated.free = migrated.free[:n-1]
	return db
}

// errChanged says that a test changed a database beyond its rows.
var errChanged = errors.New("its schema or settings differ from the template's")

// recycle ends every other session on db, checks that its schema and
// settings are the template's, empties its tables and puts it on the free
// list.
func recycle(db *copyDB) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if db.conn == nil || db.conn.IsClosed() {
		conn, err := pgx.Connect(ctx, withDatabase(migrated.adminURL, db.name))
		if err != nil {
			return err
		}
		db.conn = conn
	}
	err := onAdmin(ctx, func(admin *pgx.Conn) error {
		// pg_terminate_backend(pid, timeout) waits until the session is
		// gone (PostgreSQL 14 and later; an older server fails here, and
		// the database is dropped instead).
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid, 20000) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> $2`, db.name, db.conn.PgConn().PID()); err != nil {
			return err
		}
		var settings int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_db_role_setting s
			JOIN pg_database d ON d.oid = s.setdatabase WHERE d.datname = $1`, db.name).Scan(&settings); err != nil {
			return err
		}
		if settings != 0 {
			return errChanged
		}
		return nil
	})
	if err != nil {
		return err
	}
	var shape string
	if err := db.conn.QueryRow(ctx, shapeQuery).Scan(&shape); err != nil {
		return err
	}
	if shape != migrated.shape {
		return errChanged
	}
	if _, err := db.conn.Exec(ctx, emptyAll); err != nil {
		return err
	}
	migrated.mu.Lock()
	defer migrated.mu.Unlock()
	migrated.free = append(migrated.free, db)
	return nil
}

// onAdmin runs f on the shared session on the server's postgres database,
// opening it on first use and again after an error.
func onAdmin(ctx context.Context, f func(*pgx.Conn) error) error {
	migrated.adminMu.Lock()
	defer migrated.adminMu.Unlock()
	if migrated.admin == nil || migrated.admin.IsClosed() {
		conn, err := pgx.Connect(ctx, migrated.adminURL)
		if err != nil {
			return err
		}
		migrated.admin = conn
	}
	err := f(migrated.admin)
	if err != nil && !errors.Is(err, errChanged) {
		migrated.admin.Close(context.Background())
		migrated.admin = nil
	}
	return err
}

// shapeQuery fingerprints what a test could change in a database besides
// its rows: the relations, columns, defaults, constraints, indexes,
// triggers, functions and schemas outside the system's, and the applied
// migrations. Temporary schemas (pg_temp_N) belong to sessions and are
// left out.
const shapeQuery = `WITH ns AS (
	SELECT oid, nspname FROM pg_namespace
	WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
	  AND nspname NOT LIKE 'pg_temp_%' AND nspname NOT LIKE 'pg_toast_temp_%'
), facts AS (
	SELECT 'schema ' || nspname AS f FROM ns
	UNION ALL SELECT 'rel ' || ns.nspname || '.' || c.relname || ' ' || c.relkind::text
		FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
	UNION ALL SELECT 'col ' || ns.nspname || '.' || c.relname || '.' || a.attname || ' ' ||
		format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' ||
		coalesce(pg_get_expr(d.adbin, d.adrelid), '')
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON ns.oid = c.relnamespace
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attnum > 0 AND NOT a.attisdropped
	UNION ALL SELECT 'con ' || ns.nspname || '.' || conname || ' ' || pg_get_constraintdef(con.oid)
		FROM pg_constraint con JOIN ns ON ns.oid = con.connamespace
	UNION ALL SELECT 'idx ' || pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN ns ON ns.oid = c.relnamespace
	UNION ALL SELECT 'trg ' || tgname || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal
	UNION ALL SELECT 'fn ' || ns.nspname || '.' || p.proname FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
	UNION ALL SELECT 'rule ' || rulename FROM pg_rules WHERE schemaname IN (SELECT nspname FROM ns)
	UNION ALL SELECT 'migration ' || version_id || ' ' || is_applied FROM goose_db_version
)
SELECT md5(string_agg(f, E'\n' ORDER BY f)) FROM facts`

// emptyAll deletes every row of every table of the public schema except
// the migrations' own, and restarts the sequences those tables own. The
// tables of a test are small: DELETE touches their few pages, where
// TRUNCATE would create and remove a file for each table and index.
const emptyAll = `DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables
		WHERE schemaname = 'public' AND tablename NOT LIKE 'goose%'
	LOOP
		EXECUTE 'DELETE FROM ' || r.t;
	END LOOP;
	FOR r IN SELECT s.oid::regclass AS seq FROM pg_class s
		JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i')
		JOIN pg_class t ON t.oid = d.refobjid
		JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE s.relkind = 'S' AND n.nspname = 'public' AND t.relname NOT LIKE 'goose%'
	LOOP
		EXECUTE format('ALTER SEQUENCE %s RESTART', r.seq);
	END LOOP;
END $$`

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
	if err == nil {
		err = db.pool.QueryRow(ctx, shapeQuery).Scan(&migrated.shape)
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

// dropTemplate closes the sessions the copies kept, and drops the template
// and its copies from a server named by PLANTSTORE_TEST_POSTGRES_URL, which
// outlives the tests; pgtest's own cluster is gone with its directory by
// then.
func dropTemplate() {
	if migrated.admin != nil {
		migrated.admin.Close(context.Background())
	}
	names := []string{migrated.name}
	for _, db := range migrated.free {
		if db.conn != nil {
			db.conn.Close(context.Background())
		}
		names = append(names, db.name)
	}
	if migrated.name == "" || os.Getenv(pgtest.EnvURL) == "" {
		return
	}
	for _, name := range names {
		if err := dropDatabase(migrated.adminURL, name); err != nil {
			fmt.Fprintf(os.Stderr, "drop the test database %s: %v\n", name, err)
		}
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
