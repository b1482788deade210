package postgres

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/plantstore/plantstore"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// migrateTo migrates db up or down to version.
func migrateTo(t *testing.T, db *DB, version int64) {
	t.Helper()
	ctx := t.Context()
	if err := db.withMigrations(func(p *goose.Provider) error {
		current, err := p.GetDBVersion(ctx)
		if err == nil && current > version {
			_, err = p.DownTo(ctx, version)
		} else if err == nil {
			_, err = p.UpTo(ctx, version)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateEventFacts: rows written under version 7 (JSON payloads and
// event data, types as text) read back after migration 8 as facts that
// render the same bytes (storetest.CheckLegacyRows).
func TestMigrateEventFacts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := NewDB(pgtest.NewDatabase(t))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	migrateTo(t, db, 7)
	for _, r := range storetest.LegacyRows() {
		var cols, marks []string
		var args []any
		for c, v := range r.Values {
			cols, marks, args = append(cols, c), append(marks, "$"+strconv.Itoa(len(args)+1)), append(args, v)
		}
		if _, err := db.pool.Exec(context.Background(), `INSERT INTO `+r.Table+` (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(marks, ", ")+`)`, args...); err != nil {
			t.Fatalf("%s: %v", r.Table, err)
		}
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.CheckLegacyRows(t, db)
	// The way back runs too (its bodies are PostgreSQL's JSON of the facts).
	migrateTo(t, db, 7)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateAttemptErrors: attempts' errors written under version 9 name
// the kind of failure only after migration 10 (no address, no name server).
func TestMigrateAttemptErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := NewDB(pgtest.NewDatabase(t))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	migrateTo(t, db, 9)
	rows := storetest.LegacyAttemptErrors()
	for i, r := range rows {
		if _, err := db.pool.Exec(ctx, `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, error, duration_us, state) VALUES ('whk_1', $1, 1, 1, now(), $2, 0, 'failed')`, "msg_"+strconv.Itoa(i), r.Old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var got string
		if err := db.pool.QueryRow(ctx, `SELECT error FROM webhook_attempts WHERE message_id = $1`, "msg_"+strconv.Itoa(i)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != r.Want {
			t.Errorf("%q migrated to %q, want %q", r.Old, got, r.Want)
		}
	}
}

// TestMigrateSearch: plants written under version 10 get, from migration
// 11, updated_at (their created_at) and the search words of textsearch,
// in chunks, with progress in the log; a migration cut short resumes; the
// columns end NOT NULL; search finds the plants; the way back and up again
// runs.
func TestMigrateSearch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := NewDB(pgtest.NewDatabase(t))
	var log bytes.Buffer
	var logMu sync.Mutex
	db.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &logMu}, nil))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	migrateTo(t, db, 10)
	// More plants than a chunk, a few of them odd, and another owner's.
	r := rand.New(rand.NewPCG(3, 4))
	created := time.Date(2024, 1, 2, 3, 4, 5, 678000, time.UTC)
	var plants []*plantstore.Plant
	for id := int64(1); id <= fillChunk+2345; id++ {
		plants = append(plants, benchPlant(r, "alice", id, created.Add(time.Duration(id)*time.Millisecond)))
	}
	plants = append(plants,
		&plantstore.Plant{Owner: "bob", ID: 1, Name: "Café au LAIT", Tag: ptr("Ångström"), CreatedAt: created},
		&plantstore.Plant{Owner: "bob", ID: 2, Name: "!!!", CreatedAt: created},
		&plantstore.Plant{Owner: "bob", ID: 3, Name: "ﬁcus İstanbul", Tag: ptr(""), CreatedAt: created})
	rows := make([][]any, len(plants))
	for i, p := range plants {
		rows[i] = []any{p.Owner, p.ID, p.Name, p.Tag, p.CreatedAt}
	}
	if _, err := db.pool.CopyFrom(ctx, pgx.Identifier{"plants"}, []string{"owner", "id", "name", "tag", "created_at"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	// A run cut short: the columns added, the first plants filled.
	if _, err := db.pool.Exec(ctx, qSearchColumns); err != nil { // as migrateSearch starts
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE plants SET search = `+searchOf+`$1`+searchEnd+`, updated_at = created_at WHERE owner = 'alice' AND id = 1`,
		searchText(plants[0].Name, plants[0].Tag)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	for _, want := range []string{
		fmt.Sprintf("migration: search index: filling %d plants", len(plants)-1),
		fmt.Sprintf("migration: search index: %d of %d plants filled in", len(plants)-1, len(plants)-1),
		"migration: search index: done in",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	logMu.Unlock()
	check := func() {
		t.Helper()
		byKey := map[[2]string]*plantstore.Plant{}
		for _, p := range plants {
			byKey[[2]string{p.Owner, strconv.FormatInt(p.ID, 10)}] = p
		}
		n := 0
		rows, _ := db.pool.Query(ctx, `SELECT owner, id, updated_at, array_to_string(tsvector_to_array(search), ' ') FROM plants`)
		defer rows.Close()
		for rows.Next() {
			var (
				owner, words string
				id           int64
				updated      time.Time
			)
			if err := rows.Scan(&owner, &id, &updated, &words); err != nil {
				t.Fatal(err)
			}
			n++
			p := byKey[[2]string{owner, strconv.FormatInt(id, 10)}]
			want := strings.Fields(searchText(p.Name, p.Tag))
			got := strings.Fields(words)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) || !updated.Equal(p.CreatedAt) {
				t.Fatalf("%s/%d %q %v: words %q, updated_at %v; want %q, %v", owner, id, p.Name, p.Tag, got, updated, want, p.CreatedAt)
			}
		}
		if err := rows.Err(); err != nil || n != len(plants) {
			t.Fatalf("%d plants read (%v), want %d", n, err, len(plants))
		}
		var notNull int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'plants'::regclass AND attname IN ('updated_at', 'search') AND attnotnull`).Scan(&notNull); err != nil || notNull != 2 {
			t.Fatalf("%d of updated_at and search are NOT NULL (%v), want both", notNull, err)
		}
		for _, q := range []struct {
			words []string
			want  []int64
		}{{[]string{"cafe", "ang"}, []int64{1}}, {[]string{"istanbul", "fi"}, []int64{3}}, {[]string{"lait"}, []int64{1}}} {
			got, err := db.ListPlants(ctx, plantstore.PlantFilter{Owner: "bob", Words: q.words, Limit: 10})
			if err != nil || !slices.Equal(ids(got), q.want) {
				t.Errorf("bob's plants with %q: %v, %v; want %v", q.words, ids(got), err, q.want)
			}
		}
	}
	check()
	migrateTo(t, db, 10)
	migrateTo(t, db, searchMigrationVersion)
	check()
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
