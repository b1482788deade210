package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cliexit"
	"github.com/plantstore/plantstore/internal/outfile"
	"github.com/plantstore/plantstore/plantlines"
	"github.com/plantstore/plantstore/service"
)

// The plants' JSON lines format (export writes it, import reads it): one
// object a line, {"owner":…,"id":…,"name":…,"tag":…}; tag is left out when
// the plant has none. Lines come by owner, then id (text by bytes). It is
// the contract's Plant with its owner, so a line without "owner" is a
// NewPlant, which `plants import` and import --owner take too.

// exportLine is one line of the format.
type exportLine struct {
	Owner string  `json:"owner"`
	ID    int64   `json:"id"`
	Name  string  `json:"name"`
	Tag   *string `json:"tag,omitempty"`
}

// exportCmd is `plantstore export`.
type exportCmd struct {
	dbFlags
	To    string `name:"to" default:"-" placeholder:"FILE" help:"Where to write the JSON lines: a new file (written beside it first, mode 0600, then renamed into place, so it is whole or absent) or - for stdout."`
	Force bool   `name:"force" help:"Replace --to if it exists (never a SQLite database, nor a file a process has open as one)."`
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

	n := 0
	write := func(out io.Writer) error {
		w := bufio.NewWriterSize(out, 64<<10)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for row, err := range snap.Rows(ctx, plantstore.TableNamed("plants")) {
			if err != nil {
				return storageError(err)
			}
			line := exportLine{Owner: row[0].(string), ID: row[1].(int64), Name: row[2].(string)}
			if c.Owner != "" && line.Owner != c.Owner {
				continue
			}
			if tag, ok := row[3].(string); ok {
				line.Tag = &tag
			}
			if err := enc.Encode(&line); err != nil {
				return err
			}
			n++
		}
		return w.Flush()
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
	Owner string `name:"owner" help:"Owner of the lines that have no \"owner\" (NewPlant lines); a line's own owner always wins."`
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
	if c.Owner != "" {
		if err := plantstore.ValidateOwner(c.Owner); err != nil {
			return cliexit.Usagef("--owner: %s", cliexit.Describe(err))
		}
	}
	in, cleanup, err := c.input(e)
	if err != nil {
		return err
	}
	defer cleanup()
	// Pass one: every line valid, or nothing is loaded.
	lines, err := c.scan(in, nil)
	if err != nil {
		return err
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
	stored := 0
	batch := make([]*plantstore.Plant, 0, c.Batch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := svc.ImportPlants(ctx, batch)
		if err != nil {
			return cliError(err)
		}
		stored += n
		batch = batch[:0]
		return nil
	}
	_, err = c.scan(in, func(p *plantstore.Plant) error {
		batch = append(batch, p)
		if len(batch) == c.Batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	switch {
	case err != nil && ctx.Err() != nil: // Ctrl-C or SIGTERM
		fmt.Fprintf(e.stderr, "plantstore: import interrupted: %d plants stored; run the same import again to load the rest\n", stored)
		return cliexit.Interrupted(context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("%w (%d plants stored before it; run the same import again to load the rest)", err, stored)
	}
	fmt.Fprintf(e.stderr, "plantstore: imported %d plants of %d (%d skipped: their owner had that id already) in %s\n",
		stored, lines, lines-stored, time.Since(start).Round(time.Millisecond))
	return nil
}

// input returns the input as a file it can read twice: the --from file, or
// stdin spooled to a temporary file.
func (c *importCmd) input(e *env) (f *os.File, cleanup func(), err error) {
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

// scan reads r's plant lines (plantlines: the checks of the API's
// NewPlant, with each line's owner), calling each (if set) with every
// plant, and returns how many there were. The first bad line stops it with
// an error naming its number. Blank lines are skipped.
func (c *importCmd) scan(r io.Reader, each func(*plantstore.Plant) error) (int, error) {
	lr := plantlines.NewReader(r, plantlines.Options{Format: plantlines.JSONLines, Owners: true, DefaultOwner: c.Owner})
	n := 0
	for {
		l, err := lr.Read()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if errors.Is(l.Err, plantlines.ErrNoOwner) {
			return n, fmt.Errorf(`line %d: no "owner" (give one on the line, or --owner)`, l.Number)
		}
		if l.Err != nil {
			return n, fmt.Errorf("line %d: %v", l.Number, l.Err)
		}
		n++
		if each != nil {
			if err := each(l.Plant); err != nil {
				return n, err
			}
		}
	}
}
