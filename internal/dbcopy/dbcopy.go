// Package dbcopy makes one database a verified copy of another, on any two
// backends (plantstore copy): every table of the portable schema
// (portable.Tables), read from a consistent snapshot of the source, so it
// may run while a server serves the source.
//
// A copy is a merge, not a blind load: each table is read from the source
// and from the target in key order, side by side, in chunks; a chunk whose
// rows are equal on both sides writes nothing, and otherwise the target's
// differing rows are deleted and the source's inserted, in one transaction
// per chunk. So a copy interrupted at any point resumes by running again
// (Options.Resume): it rewrites only what differs, and a second pass after
// the source stopped serving brings over just the writes made during the
// first (the cut-over in docs/scaling.md). Rows only the target has are
// deleted. Then every table is read back from the target and its count and
// checksum compared with the source's.
package dbcopy

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/plantstore/plantstore/internal/portable"
)

// DefaultChunkRows is how many source rows one chunk holds when
// Options.ChunkRows is zero.
const DefaultChunkRows = 1000

// Options tune a copy.
type Options struct {
	// Resume allows a target that has rows already (an interrupted copy, or
	// an earlier pass): it is made equal to the source. Without it a
	// target with any row is refused with ErrNotEmpty.
	Resume bool
	// ChunkRows bounds the rows of one chunk (one target transaction).
	ChunkRows int
	// Start, if set, is called before a table is copied with its source
	// row count; Progress after each chunk with the rows done so far.
	Start    func(table string, rows int64)
	Progress func(table string, done int64)
}

// TableResult is what a copy did to one table, and what it checked.
type TableResult struct {
	Table    string
	Rows     int64  // rows in the source snapshot, and in the target after
	Checksum string // of the source snapshot's rows, equal to the target's
	Inserted int64  // rows written to the target
	Deleted  int64  // target rows removed (only in the target, or different)
}

// ErrNotEmpty: the target has rows and Options.Resume is not set.
var ErrNotEmpty = errors.New("the target database is not empty")

// MismatchError: after the copy, a table of the target differs from the
// source snapshot (something else wrote to the target meanwhile).
type MismatchError struct {
	Table                    string
	Rows, TargetRows         int64
	Checksum, TargetChecksum string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("table %s differs after the copy: source %d rows %s, target %d rows %s (did something else write to the target?)",
		e.Table, e.Rows, e.Checksum, e.TargetRows, e.TargetChecksum)
}

// Copy makes dst's tables equal to a snapshot of src's, then verifies them.
// Both must have the same schema version (the caller checks).
func Copy(ctx context.Context, src, dst portable.TableStore, opts Options) ([]TableResult, error) {
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	from, err := src.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer from.Close()
	to, err := dst.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	defer to.Close()
	if !opts.Resume {
		for _, t := range portable.Tables {
			n, err := to.Count(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("target: %w", err)
			}
			if n > 0 {
				return nil, fmt.Errorf("%w: table %s has %d rows", ErrNotEmpty, t.Name, n)
			}
		}
	}
	results := make([]TableResult, 0, len(portable.Tables))
	for _, t := range portable.Tables {
		r, err := copyTable(ctx, t, from, to, dst, &opts)
		if err != nil {
			return results, fmt.Errorf("copy %s: %w", t.Name, err)
		}
		results = append(results, r)
	}
	to.Close()
	return results, Verify(ctx, dst, results)
}

// Verify reads every table of results back from dst, in a snapshot, and
// compares its count and checksum with the result's.
func Verify(ctx context.Context, dst portable.TableStore, results []TableResult) error {
	snap, err := dst.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer snap.Close()
	for _, r := range results {
		t := portable.TableNamed(r.Table)
		sum, err := Checksum(ctx, snap, t)
		if err != nil {
			return fmt.Errorf("verify %s: %w", t.Name, err)
		}
		if sum.Rows != r.Rows || sum.Sum() != r.Checksum {
			return &MismatchError{Table: t.Name, Rows: r.Rows, Checksum: r.Checksum, TargetRows: sum.Rows, TargetChecksum: sum.Sum()}
		}
	}
	return nil
}

// Checksum reads t from snap and returns its rows' checksum.
func Checksum(ctx context.Context, snap portable.Snapshot, t *portable.Table) (*portable.TableChecksum, error) {
	sum := portable.NewTableChecksum()
	for row, err := range snap.Rows(ctx, t) {
		if err != nil {
			return nil, err
		}
		sum.Add(row)
	}
	return sum, nil
}

// copyTable merges t: source rows in chunks, each compared with the target
// rows whose keys fall in its range.
func copyTable(ctx context.Context, t *portable.Table, from, to portable.Snapshot, dst portable.TableStore, opts *Options) (TableResult, error) {
	res := TableResult{Table: t.Name}
	if opts.Start != nil {
		n, err := from.Count(ctx, t)
		if err != nil {
			return res, fmt.Errorf("source: %w", err)
		}
		opts.Start(t.Name, n)
	}
	target := newPeeker(to.Rows(ctx, t))
	defer target.stop()
	sum := portable.NewTableChecksum()
	chunk := make([]portable.Row, 0, opts.ChunkRows)

	// write replaces the target's del rows by ins.
	write := func(del, ins []portable.Row) error {
		if len(del)+len(ins) == 0 {
			return nil
		}
		if err := dst.ReplaceRows(ctx, t, del, ins); err != nil {
			return fmt.Errorf("target: %w", err)
		}
		res.Deleted += int64(len(del))
		res.Inserted += int64(len(ins))
		return nil
	}
	// take returns the next target rows: those up to key's (all when key
	// is nil), at most max when max > 0.
	take := func(key portable.Row, max int) ([]portable.Row, error) {
		var rows []portable.Row
		for max <= 0 || len(rows) < max {
			row, ok, err := target.peek()
			if err != nil {
				return nil, fmt.Errorf("target: %w", err)
			}
			if !ok || (key != nil && t.CompareKeys(row, key) > 0) {
				break
			}
			rows = append(rows, row)
			target.next()
		}
		return rows, nil
	}
	// apply writes the difference between src, a chunk of source rows, and
	// the target rows up to its last key; after the last chunk, it deletes
	// what the target has left, a chunk at a time.
	apply := func(src []portable.Row, last bool) error {
		if len(src) > 0 {
			tgt, err := take(src[len(src)-1], 0)
			if err != nil {
				return err
			}
			if err := write(diff(t, src, tgt)); err != nil {
				return err
			}
		}
		for last {
			tgt, err := take(nil, opts.ChunkRows)
			if err != nil || len(tgt) == 0 {
				return err
			}
			if err := write(tgt, nil); err != nil {
				return err
			}
		}
		return nil
	}

	for row, err := range from.Rows(ctx, t) {
		if err != nil {
			return res, fmt.Errorf("source: %w", err)
		}
		sum.Add(row)
		chunk = append(chunk, row)
		if len(chunk) == opts.ChunkRows {
			if err := apply(chunk, false); err != nil {
				return res, err
			}
			chunk = chunk[:0]
			if opts.Progress != nil {
				opts.Progress(t.Name, sum.Rows)
			}
		}
	}
	if err := apply(chunk, true); err != nil {
		return res, err
	}
	if opts.Progress != nil {
		opts.Progress(t.Name, sum.Rows)
	}
	res.Rows, res.Checksum = sum.Rows, sum.Sum()
	return res, ctx.Err()
}

// diff compares src and tgt, both in key order: the target rows to delete
// (only in tgt, or different) and the source rows to insert (only in src,
// or different).
func diff(t *portable.Table, src, tgt []portable.Row) (del, ins []portable.Row) {
	i, j := 0, 0
	for i < len(src) || j < len(tgt) {
		switch {
		case j == len(tgt):
			ins = append(ins, src[i])
			i++
		case i == len(src):
			del = append(del, tgt[j])
			j++
		default:
			switch c := t.CompareKeys(src[i], tgt[j]); {
			case c < 0:
				ins = append(ins, src[i])
				i++
			case c > 0:
				del = append(del, tgt[j])
				j++
			default:
				if !t.EqualRows(src[i], tgt[j]) {
					del = append(del, tgt[j])
					ins = append(ins, src[i])
				}
				i++
				j++
			}
		}
	}
	return del, ins
}

// peeker reads a row sequence one row ahead.
type peeker struct {
	pull func() (portable.Row, error, bool)
	stop func()
	row  portable.Row
	err  error
	has  bool // row or err holds the next item
	done bool
}

func newPeeker(seq iter.Seq2[portable.Row, error]) *peeker {
	p := &peeker{}
	p.pull, p.stop = iter.Pull2(seq)
	return p
}

// peek returns the next row without taking it; ok is false at the end.
func (p *peeker) peek() (row portable.Row, ok bool, err error) {
	if !p.has && !p.done {
		p.row, p.err, p.has = p.pull()
		p.done = !p.has
	}
	if p.err != nil {
		return nil, false, p.err
	}
	return p.row, p.has, nil
}

// next takes the row peek returned.
func (p *peeker) next() { p.has = false }
