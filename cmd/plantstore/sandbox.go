package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/plantlines"
)

// seedOwner owns the plants of serve --seed: the owner of the bootstrap
// token, the one token a memory: server has.
const seedOwner = "admin"

// seedPlant is a plant of the --seed file and its line.
type seedPlant struct {
	line  int
	plant *plantstore.Plant
}

// readSeed reads and checks the --seed file before anything starts, with
// the one reader of plant lines (plantlines, as plants import and import
// read them): a line that is not a valid plant is an error naming it, and
// nothing is seeded.
func (c *serveCmd) readSeed() ([]seedPlant, error) {
	if c.Seed == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.Seed)
	if err != nil {
		return nil, fmt.Errorf("--seed: %w", err)
	}
	items, err := plantlines.ReadAll(data, plantlines.Options{Format: plantlines.Auto, Name: c.Seed})
	if err != nil {
		return nil, fmt.Errorf("--seed %s: %w", c.Seed, err)
	}
	plants := make([]seedPlant, 0, len(items))
	invalid := 0
	var first plantlines.Line
	for _, it := range items {
		if it.Err != nil {
			if invalid == 0 {
				first = it
			}
			invalid++
			continue
		}
		p := *it.Plant
		p.Owner = seedOwner
		plants = append(plants, seedPlant{it.Number, &p})
	}
	if invalid > 0 {
		more := ""
		if invalid > 1 {
			more = fmt.Sprintf(" (and %d more invalid lines; plantstore plants import --rejects FILE lists them all)", invalid-1)
		}
		return nil, fmt.Errorf("--seed %s: line %d: %v%s", c.Seed, first.Number, first.Err, more)
	}
	return plants, nil
}

// seedWorkers is how many creates of --seed are in flight at once (they
// share commits).
const seedWorkers = 8

// seed creates the plants of --seed for seedOwner; the first that fails
// (the same id twice with different contents) stops the start, naming its
// line.
func (c *serveCmd) seed(ctx context.Context, plants plantstore.PlantService, seed []seedPlant, logger *slog.Logger) error {
	if len(seed) == 0 {
		if c.Seed != "" {
			logger.Warn("--seed: the file holds no plants", "file", c.Seed)
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(seedWorkers, len(seed)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(seed) {
					return
				}
				if _, _, err := plants.CreatePlant(ctx, seed[i].plant); err != nil {
					cancel(fmt.Errorf("--seed %s: line %d: %s", c.Seed, seed[i].line, cliexit.Describe(err)))
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	logger.Info("seeded the database", "plants", len(seed), "owner", seedOwner, "file", c.Seed)
	return nil
}

// warnIgnored logs a warning for each setting given (flag or environment)
// that has no effect with the others.
func (c *serveCmd) warnIgnored(logger *slog.Logger, set map[string]bool) {
	for _, w := range c.ignored(set) {
		logger.Warn(w)
	}
}

// ignored lists, as messages, serve's settings that set gives but that do
// not apply.
func (c *serveCmd) ignored(set map[string]bool) []string {
	out := c.dbFlags.ignored(set)
	switch {
	case set["create-db"] && c.CreateDB && isPostgres(c.DB):
		out = append(out, "--create-db (PLANTSTORE_CREATE_DB) is ignored: it creates a SQLite file; a PostgreSQL database is created by its administrator")
	case set["create-db"] && c.CreateDB && isMemory(c.DB):
		out = append(out, "--create-db (PLANTSTORE_CREATE_DB) is ignored with --db memory: (always new and empty)")
	}
	switch {
	case set["durability"] && isPostgres(c.DB):
		out = append(out, "--durability (PLANTSTORE_DURABILITY) is ignored on PostgreSQL: durability is the server's (synchronous_commit)")
	case set["durability"] && isMemory(c.DB):
		out = append(out, "--durability (PLANTSTORE_DURABILITY) is ignored with --db memory: (nothing is written to disk)")
	}
	if set["sqlite-wal-autocheckpoint"] && (isPostgres(c.DB) || isMemory(c.DB)) {
		out = append(out, "--sqlite-wal-autocheckpoint (PLANTSTORE_SQLITE_WAL_AUTOCHECKPOINT) is ignored: it applies to a SQLite file's WAL")
	}
	if set["migrate"] && !c.Migrate && isMemory(c.DB) {
		out = append(out, "--no-migrate (PLANTSTORE_MIGRATE=false) is ignored with --db memory: (a new database is always migrated)")
	}
	if set["rate-burst"] && c.RateLimit == 0 {
		out = append(out, "--rate-burst (PLANTSTORE_RATE_BURST) is ignored: --rate-limit 0 turns the per-token limit off")
	}
	if set["bootstrap-admin"] && !c.BootstrapAdmin && c.BootstrapToken != "" {
		out = append(out, "--no-bootstrap-admin (PLANTSTORE_BOOTSTRAP_ADMIN=false) is ignored: --bootstrap-token registers the first admin token")
	}
	return out
}

// ignored lists, as messages, the database settings that set gives but
// that do not apply to the database --db names.
func (f *dbFlags) ignored(set map[string]bool) []string {
	var out []string
	if isPostgres(f.DB) {
		return nil
	}
	for _, flag := range []struct{ name, env string }{
		{"db-max-conns", "PLANTSTORE_DB_MAX_CONNS"},
		{"db-statement-timeout", "PLANTSTORE_DB_STATEMENT_TIMEOUT"},
		{"db-transaction-pooler", "PLANTSTORE_DB_TRANSACTION_POOLER"},
	} {
		if set[flag.name] {
			out = append(out, fmt.Sprintf("--%s (%s) is ignored: it applies to PostgreSQL only", flag.name, flag.env))
		}
	}
	return out
}

// warnDB prints a warning on stderr for each database setting that does
// not apply (the commands other than serve, which logs them), and makes
// the database's file mode warnings go there too.
func warnDB(e *env, f *dbFlags) {
	for _, w := range f.ignored(e.set) {
		fmt.Fprintf(e.stderr, "plantstore: warning: %s\n", w)
	}
	f.warn = func(msg string) { fmt.Fprintf(e.stderr, "plantstore: warning: %s\n", msg) }
}
