// Command preload fills a plantstore database with plants of one owner for
// the growth benchmark, directly through the storage layer rather than over
// HTTP: it opens the backend (sqlite.NewDB or postgres.NewDB), applies the
// migrations, then imports ids from..to through the plant service's
// ImportPlants in big batches (one transaction each), which skips ids that
// exist already.
//
//	preload --db /tmp/p.db --owner admin --from 1 --to 1000000
//	preload --db 'postgres://postgres@127.0.0.1:5433/plantstore?sslmode=disable' --owner admin --to 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
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
	flag.Parse()
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
// how many it stored; on PostgreSQL it then refreshes the planner's
// statistics.
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
	// Fresh statistics, as autovacuum would give a table this size later.
	conn, err := pgx.Connect(ctx, o.db)
	if err != nil {
		return 0, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `ANALYZE plants`); err != nil {
		return 0, fmt.Errorf("postgres: analyze: %w", err)
	}
	return n, nil
}

// load migrates, then imports ids from..to through the plant service,
// o.batch plants per transaction, and closes db. It returns how many plants
// it stored (ids that existed already are skipped).
func load(ctx context.Context, db plantstore.Backend, o options) (int64, error) {
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return 0, err
	}
	plants := service.New(db, service.Config{}).Plants
	var stored int64
	batch := make([]*plantstore.Plant, 0, o.batch)
	for lo := o.from; lo <= o.to; lo += o.batch {
		hi := min(o.to, lo+o.batch-1)
		batch = batch[:0]
		for id := lo; id <= hi; id++ {
			batch = append(batch, &plantstore.Plant{Owner: o.owner, ID: id, Name: plantName(id), Tag: plantTag(id)})
		}
		n, err := plants.ImportPlants(ctx, batch)
		if err != nil {
			return stored, fmt.Errorf("ids %d..%d: %w", lo, hi, err)
		}
		stored += int64(n)
	}
	return stored, db.Close()
}

func plantName(id int64) string { return "plant " + strconv.FormatInt(id, 10) }

// plantTag gives every tenth plant no tag, like real data with optional tags.
func plantTag(id int64) *string {
	if id%10 == 0 {
		return nil
	}
	t := "bench"
	return &t
}
