package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/dbcopy"
)

// copyCmd is `plantstore copy`.
type copyCmd struct {
	From      string        `name:"from" env:"PLANTSTORE_COPY_FROM" required:"" placeholder:"DB" help:"Source database: a SQLite file or a postgres:// URL; only read."`
	To        string        `name:"to" env:"PLANTSTORE_COPY_TO" required:"" placeholder:"DB" help:"Target database: a SQLite file or a postgres:// URL; migrated first."`
	Resume    bool          `name:"resume" help:"Allow a non-empty target: make it equal to the source."`
	ChunkRows int           `name:"chunk-rows" default:"1000" help:"Rows per chunk: one target transaction each, compared as a whole on --resume."`
	Timeout   time.Duration `name:"db-timeout" default:"60s" help:"Limit for one storage call on either side (a chunk's write, a connection)."`
}

// Run copies, verifies and prints a line per table.
func (c *copyCmd) Run(ctx context.Context, e *env) error {
	switch {
	case c.ChunkRows < 1 || c.ChunkRows > 100000:
		return cliexit.Usagef("--chunk-rows must be 1..100000")
	case c.Timeout <= 0:
		return cliexit.Usagef("--db-timeout must be positive")
	case isMemory(c.From) || isMemory(c.To):
		return cliexit.Usagef("memory: is a database in a serve process's memory: copy cannot reach it")
	case sameDatabase(c.From, c.To):
		return cliexit.Usagef("--from and --to are the same database")
	}
	// Both checked before either is opened: --to is created and written.
	if err := notCompanion("--from", c.From); err != nil {
		return err
	}
	if err := notCompanion("--to", c.To); err != nil {
		return err
	}
	warn := func(msg string) { fmt.Fprintf(e.stderr, "plantstore: warning: %s\n", msg) }
	from := &dbFlags{DB: c.From, DBMaxConns: 2, DBStatementTimeout: c.Timeout, DBTimeout: c.Timeout, create: createNever, warn: warn}
	src, err := from.open(ctx, false)
	if err != nil {
		return fmt.Errorf("--from %s: %w", displayDB(c.From), err)
	}
	defer src.Close()
	to := &dbFlags{DB: c.To, DBMaxConns: 4, DBStatementTimeout: c.Timeout, DBTimeout: c.Timeout, create: createAlways, warn: warn}
	dst, err := to.open(ctx, true)
	if err != nil {
		return fmt.Errorf("--to %s: %w", displayDB(c.To), err)
	}
	defer dst.Close()
	if to.created {
		fmt.Fprintf(e.stderr, "plantstore: created a new database %s\n", c.To)
	}

	opts := dbcopy.Options{Resume: c.Resume, ChunkRows: c.ChunkRows}
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var bar *progressbar.ProgressBar
		opts.Start = func(table string, rows int64) {
			if bar != nil {
				bar.Finish()
			}
			bar = progressbar.NewOptions64(rows,
				progressbar.OptionSetWriter(e.stderr),
				progressbar.OptionSetDescription(fmt.Sprintf("%-22s", table)),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("rows"),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
		opts.Progress = func(_ string, done int64) { bar.Set64(done) }
		defer func() {
			if bar != nil {
				bar.Finish()
			}
		}()
	}
	start := time.Now()
	results, err := dbcopy.Copy(ctx, src, dst, opts)
	switch {
	case errors.Is(err, dbcopy.ErrNotEmpty):
		return fmt.Errorf("--to %s: %w: give an empty database, or --resume to make this one equal to the source (rows only it has are deleted)", displayDB(c.To), err)
	case err != nil && ctx.Err() != nil:
		// Ctrl-C or SIGTERM: what was written stays (each chunk is a
		// transaction of its own), and --resume writes the rest.
		fmt.Fprintf(e.stderr, "plantstore: copy interrupted: run the same command with --resume to finish it (%v)\n", err)
		return cliexit.Interrupted(context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("copy: %w", storageError(err))
	}
	w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "table\trows\tinserted\tdeleted\tchecksum\t")
	var rows, written int64
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t\n", r.Table, r.Rows, r.Inserted, r.Deleted, r.Checksum)
		rows += r.Rows
		written += r.Inserted + r.Deleted
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "plantstore: copied %s to %s: %d rows in %d tables (%d row writes), every count and checksum verified, in %s\n",
		displayDB(c.From), displayDB(c.To), rows, len(results), written, time.Since(start).Round(time.Millisecond))
	return nil
}

// sameDatabase reports whether two --db values name one database: the same
// SQLite file, or the same URL.
func sameDatabase(a, b string) bool {
	if isPostgres(a) || isPostgres(b) {
		return a == b
	}
	fa, errA := filepath.Abs(a)
	fb, errB := filepath.Abs(b)
	if errA != nil || errB != nil {
		return a == b
	}
	if fa == fb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
