// Command preload fills a plantstore database with plants of one owner for
// the growth benchmark, directly through the storage layer rather than over
// HTTP: it opens the database with the store (sqlite.NewDB or
// postgres.NewDB), applies the migrations, then inserts ids from..to with
// the store's BulkInsertPlants in big batches (SQLite: one transaction per
// batch; PostgreSQL: COPY).
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
	"github.com/plantstore/plantstore/postgres"
	"github.com/plantstore/plantstore/sqlite"
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
	flag.Int64Var(&o.batch, "batch", 50000, "rows per transaction (SQLite) or per COPY (PostgreSQL)")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	if o.db == "" || o.owner == "" || o.batch < 1 {
		fmt.Fprintln(os.Stderr, "preload: --db and --owner are required, --batch must be positive")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	var err error
	if strings.HasPrefix(o.db, "postgres://") || strings.HasPrefix(o.db, "postgresql://") {
		err = loadPostgres(ctx, o)
	} else {
		err = loadSQLite(ctx, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "preload:", err)
		os.Exit(1)
	}
	n := max(0, o.to-o.from+1)
	el := time.Since(start)
	fmt.Fprintf(os.Stderr, "preload: %d plants (ids %d..%d, owner %s) in %s (%.0f rows/s)\n",
		n, o.from, o.to, o.owner, el.Round(time.Millisecond), float64(n)/el.Seconds())
}

// bulkStore is what both stores offer for loading.
type bulkStore interface {
	BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) error
	Migrate(ctx context.Context) (int, error)
	Close() error
}

func loadSQLite(ctx context.Context, o options) error {
	store := sqlite.NewDB(o.db)
	// The preload need not survive a power cut, only be complete when it
	// exits (Close checkpoints nothing, but the WAL is on disk).
	store.Durability = sqlite.DurabilityRelaxed
	if err := store.Open(); err != nil {
		return err
	}
	return load(ctx, store, o)
}

func loadPostgres(ctx context.Context, o options) error {
	store := postgres.NewDB(o.db)
	store.Config.OpTimeout = 10 * time.Minute // one COPY per batch
	store.Config.StatementTimeout = 10 * time.Minute
	if err := store.Open(ctx); err != nil {
		return err
	}
	if err := load(ctx, store, o); err != nil {
		return err
	}
	// Fresh statistics, as autovacuum would give a table this size later.
	conn, err := pgx.Connect(ctx, o.db)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `ANALYZE plants`); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}

// load migrates, then inserts ids from..to through the store's bulk insert,
// o.batch plants per transaction.
func load(ctx context.Context, store bulkStore, o options) error {
	defer store.Close()
	if _, err := store.Migrate(ctx); err != nil {
		return err
	}
	batch := make([]*plantstore.Plant, 0, o.batch)
	for lo := o.from; lo <= o.to; lo += o.batch {
		hi := min(o.to, lo+o.batch-1)
		batch = batch[:0]
		for id := lo; id <= hi; id++ {
			batch = append(batch, &plantstore.Plant{Owner: o.owner, ID: id, Name: plantName(id), Tag: plantTag(id)})
		}
		if err := store.BulkInsertPlants(ctx, batch); err != nil {
			return fmt.Errorf("ids %d..%d: %w", lo, hi, err)
		}
	}
	return store.Close()
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
