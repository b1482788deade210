// Command preload fills a plantstore database with plants of one owner for
// the growth and search benchmarks, directly through the storage layer
// rather than over HTTP: it opens the backend (sqlite.NewDB or
// postgres.NewDB), applies the migrations, then stores ids from..to with the
// backend's BulkInsertPlants (what the plant service's ImportPlants calls) in
// big batches (one transaction each), which skips ids that exist already.
// It calls the store itself, not ImportPlants, to give every plant its own
// creation time (ImportPlants stamps a whole batch with one).
//
// Names, tags and creation times are functions of the id (vocab.go): 2 or 3
// words from a Zipf-distributed vocabulary of 3,000 words, one of 20 tags
// (none for every tenth plant), createdBase plus id milliseconds. --words
// prints the search benchmark's queries with how many of the plants
// from..to each matches, --print the plants themselves; neither needs --db.
//
//	preload --db /tmp/p.db --owner admin --from 1 --to 1000000
//	preload --db 'postgres://postgres@127.0.0.1:5433/plantstore?sslmode=disable' --owner admin --to 1000000
//	preload --words --to 10000000
//	preload --print --from 1 --to 20
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/sqlite"
	"github.com/plantstore/plantstore/internal/textsearch"
)

type options struct {
	db       string
	owner    string
	from, to int64
	batch    int64
}

func main() {
	var o options
	flag.StringVar(&o.db, "db", "", "SQLite file path or postgres:// URL (required)")
	flag.StringVar(&o.owner, "owner", "admin", "owner of the plants (the owner of the token the benchmark uses)")
	flag.Int64Var(&o.from, "from", 1, "first id")
	flag.Int64Var(&o.to, "to", 0, "last id (inclusive); nothing to do when to < from")
	flag.Int64Var(&o.batch, "batch", 50000, "rows per transaction")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	words := flag.Bool("words", false, "print the search benchmark's queries and how many of the plants from..to each matches (no --db)")
	printPlantsFlag := flag.Bool("print", false, "print the plants from..to: id, created_at, tag, name (no --db)")
	flag.Parse()
	if *words || *printPlantsFlag {
		out := bufio.NewWriter(os.Stdout)
		if *words {
			printWords(out, o.from, o.to)
		} else {
			printPlants(out, o.from, o.to)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "preload:", err)
			os.Exit(1)
		}
		return
	}
	if o.db == "" || o.owner == "" || o.batch < 1 {
		fmt.Fprintln(os.Stderr, "preload: --db and --owner are required, --batch must be positive")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	n, err := preload(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preload:", err)
		os.Exit(1)
	}
	el := time.Since(start)
	fmt.Fprintf(os.Stderr, "preload: %d plants (ids %d..%d, owner %s) in %s (%.0f rows/s)\n",
		n, o.from, o.to, o.owner, el.Round(time.Millisecond), float64(n)/el.Seconds())
}

// isPostgres reports whether db is a PostgreSQL URL rather than a file path.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openBackend returns the backend for o.db, not yet opened, set up for bulk
// loading.
func openBackend(o options) plantstore.Backend {
	if isPostgres(o.db) {
		db := postgres.NewDB(o.db)
		db.OpTimeout = 10 * time.Minute // one statement per batch
		db.Config.StatementTimeout = 10 * time.Minute
		return db
	}
	db := sqlite.NewDB(o.db)
	// The preload need not survive a power cut, only be complete when it
	// exits (Close checkpoints nothing, but the WAL is on disk).
	db.Durability = sqlite.DurabilityRelaxed
	return db
}

// preload opens and migrates the backend, imports the plants and returns
// how many it stored; on PostgreSQL it then vacuums and analyzes the table
// and checkpoints.
func preload(ctx context.Context, o options) (int64, error) {
	db := openBackend(o)
	if err := db.Open(ctx); err != nil {
		return 0, err
	}
	n, err := load(ctx, db, o)
	if err != nil {
		return 0, err
	}
	if !isPostgres(o.db) {
		return n, nil
	}
	// The table as autovacuum would leave it after a load this size
	// (fresh statistics, the visibility map set), and its pages written: so
	// that the measurements that follow do not share the machine with that
	// vacuum or with a checkpoint of the load.
	conn, err := pgx.Connect(ctx, o.db)
	if err != nil {
		return 0, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, stmt := range []string{`VACUUM (ANALYZE) plants`, `CHECKPOINT`} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return 0, fmt.Errorf("postgres: %s: %w", stmt, err)
		}
	}
	return n, nil
}

// load migrates, then stores ids from..to, o.batch plants per transaction,
// and closes db. It returns how many plants it stored (ids that existed
// already are skipped).
func load(ctx context.Context, db plantstore.Backend, o options) (int64, error) {
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return 0, err
	}
	var stored int64
	batch := make([]*plantstore.Plant, 0, o.batch)
	for lo := o.from; lo <= o.to; lo += o.batch {
		hi := min(o.to, lo+o.batch-1)
		batch = batch[:0]
		for id := lo; id <= hi; id++ {
			p := newPlant(o.owner, id)
			if err := p.Validate(); err != nil {
				return stored, fmt.Errorf("plant %d: %w", id, err)
			}
			batch = append(batch, p)
		}
		n, err := db.BulkInsertPlants(ctx, batch)
		if err != nil {
			return stored, fmt.Errorf("ids %d..%d: %w", lo, hi, err)
		}
		stored += int64(n)
	}
	return stored, db.Close()
}

// newPlant returns plant id of owner, as the plant service would store it.
func newPlant(owner string, id int64) *plantstore.Plant {
	at := plantstore.TruncateTime(plantCreatedAt(id))
	return &plantstore.Plant{Owner: owner, ID: id, Name: plantName(id), Tag: plantTag(id), CreatedAt: at, UpdatedAt: at}
}

// benchQuery is one of the search benchmark's queries.
type benchQuery struct {
	kind, query string
	match       func(doc string, tag *string) bool
}

// benchQueries are the search benchmark's queries: q matches a plant when
// its textsearch.Document has every word of q as a word prefix; the tag
// filter is an exact tag.
func benchQueries() []benchQuery {
	q := func(kind, query string) benchQuery {
		words := textsearch.Words(query)
		return benchQuery{kind, query, func(doc string, _ *string) bool {
			for _, w := range words {
				if !strings.Contains(doc, " "+w) {
					return false
				}
			}
			return true
		}}
	}
	return []benchQuery{
		q("common", queryCommon),
		q("rare", queryRare),
		q("two", queryTwo),
		q("prefix", queryPrefix),
		{"tag", filterTag, func(_ string, tag *string) bool { return tag != nil && *tag == filterTag }},
	}
}

// printWords writes one line per benchmark query, "kind<TAB>query<TAB>N",
// N the plants among from..to that it matches, then "all<TAB><TAB>N".
func printWords(w io.Writer, from, to int64) {
	qs := benchQueries()
	counts := make([]int64, len(qs))
	for id := from; id <= to; id++ {
		tag := plantTag(id)
		doc := textsearch.Document(plantName(id), tag)
		for i, q := range qs {
			if q.match(doc, tag) {
				counts[i]++
			}
		}
	}
	for i, q := range qs {
		fmt.Fprintf(w, "%s\t%s\t%d\n", q.kind, q.query, counts[i])
	}
	fmt.Fprintf(w, "all\t\t%d\n", max(0, to-from+1))
}

// printPlants writes plants from..to, one a line: id, created_at, tag (-
// for none), name, tab-separated.
func printPlants(w io.Writer, from, to int64) {
	for id := from; id <= to; id++ {
		p := newPlant("", id)
		tag := "-"
		if p.Tag != nil {
			tag = *p.Tag
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", id, p.CreatedAt.Format(time.RFC3339Nano), tag, p.Name)
	}
}
