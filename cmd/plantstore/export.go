package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/outfile"
	"github.com/plantstore/plantstore/internal/plantlines"
	"github.com/plantstore/plantstore/internal/service"
)

// exportCmd is `plantstore export`.
type exportCmd struct {
	dbFlags
	To    string `name:"to" default:"-" placeholder:"FILE" help:"Where to write the JSON lines: a new file, or - for stdout."`
	Force bool   `name:"force" help:"Replace --to if it exists (never a database, nor its -wal, -shm, -journal or .lock)."`
	Owner string `name:"owner" help:"Only this owner's plants (default: every owner's)."`
}

// Run writes the plants of one snapshot of the database.
func (c *exportCmd) Run(ctx context.Context, e *env) error {
	if isMemory(c.DB) {
		return cliexit.Usagef("--db memory: is a database in a serve process's memory: export cannot reach it")
	}
	if c.To != "-" {
		if err := outfile.Check(c.To, c.Force); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
	}
	warnDB(e, &c.dbFlags)
	db, err := c.open(ctx, false)
	if err != nil {
		return err
	}
	defer db.Close()
	snap, err := db.Snapshot(ctx)
	if err != nil {
		return storageError(err)
	}
	defer snap.Close()

	// plantlines writes the format import reads, by owner then id.
	n := 0
	write := func(out io.Writer) (err error) {
		n, err = plantlines.Export(ctx, snap, out, c.Owner)
		return storageError(err)
	}
	if c.To == "-" {
		err = write(e.stdout)
	} else {
		_, err = outfile.Write(c.To, c.Force, write)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "plantstore: exported %d plants\n", n)
	return nil
}

// importCmd is `plantstore import`. It reads lines with the one reader of
// plant lines (plantlines), as plants import and serve --seed do.
type importCmd struct {
	dbFlags
	From  string `name:"from" default:"-" placeholder:"FILE" help:"JSON lines to read (plantstore export's format): a file, or - for stdin."`
	Owner string `name:"owner" help:"Owner of the lines that have no \"owner\"."`
	Batch int    `name:"batch" default:"1000" help:"Plants per transaction (1..10000)."`
}

// Run checks every line first, so that a bad line anywhere loads nothing,
// then loads the plants in transactions of --batch, skipping the ids their
// owner has already: running it again after an interruption loads the rest.
// Like an API create's, nothing of an import is announced (no events, no
// webhooks): it loads data.
func (c *importCmd) Run(ctx context.Context, e *env) error {
	if c.Batch < 1 || c.Batch > 10000 {
		return cliexit.Usagef("--batch must be 1..10000")
	}
	if isMemory(c.DB) {
		return cliexit.Usagef("--db memory: is a database in a serve process's memory: import cannot reach it")
	}
	// Owners are trimmed as token create trims them (a token's owner never
	// has white space around it), then checked.
	c.Owner = strings.TrimSpace(c.Owner)
	if c.Owner != "" {
		if err := plantstore.ValidateOwner(c.Owner); err != nil {
			return cliexit.Usagef("--owner: %s", cliexit.Describe(err))
		}
	}
	in, cleanup, err := c.input()
	if err != nil {
		return err
	}
	defer cleanup()
	// Pass one: every line valid, or nothing is loaded.
	opts := plantlines.Options{Format: plantlines.JSONLines, Owners: true, DefaultOwner: c.Owner}
	lines, err := plantlines.Count(in, opts)
	if err != nil {
		return lineError(err)
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return err
	}

	warnDB(e, &c.dbFlags)
	db, err := c.open(ctx, false)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := service.New(db, service.Config{}).Plants
	start := time.Now()
	stored, err := plantlines.Load(in, opts, c.Batch, func(batch []*plantstore.Plant) (int, error) {
		n, err := svc.ImportPlants(ctx, batch)
		return n, cliError(err)
	})
	switch {
	case err != nil && ctx.Err() != nil: // Ctrl-C or SIGTERM
		fmt.Fprintf(e.stderr, "plantstore: import interrupted: %d plants stored; run the same import again to load the rest\n", stored)
		return cliexit.Interrupted(context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("%w (%d plants stored before it; run the same import again to load the rest)", lineError(err), stored)
	}
	fmt.Fprintf(e.stderr, "plantstore: imported %d plants of %d (%d skipped: their owner had that id already) in %s\n",
		stored, lines, lines-stored, time.Since(start).Round(time.Millisecond))
	return nil
}

// lineError says what to do about a line without an owner.
func lineError(err error) error {
	var le *plantlines.LineError
	if errors.As(err, &le) && errors.Is(le.Err, plantlines.ErrNoOwner) {
		return fmt.Errorf(`line %d: no "owner" (give one on the line, or --owner)`, le.Number)
	}
	return err
}

// input returns the input as a file it can read twice: the --from file, or
// stdin spooled to a temporary file.
func (c *importCmd) input() (f *os.File, cleanup func(), err error) {
	if c.From != "-" {
		f, err := os.Open(c.From)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}
	f, err = os.CreateTemp("", "plantstore-import-*")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, os.Stdin); err != nil {
		cleanup()
		return nil, nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, err
	}
	return f, cleanup, nil
}
