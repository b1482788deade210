package plantlines

import (
	"fmt"
	"io"

	"github.com/plantstore/plantstore"
)

// Count reads every line of r and returns how many plants it holds; the
// first line that is not a valid plant stops it with a *LineError. Blank
// lines are skipped. Count an input before Load, so that a bad line stores
// nothing.
func Count(r io.Reader, o Options) (int, error) { return scan(r, o, nil) }

// Load reads r's plants and gives them to store in batches of at most
// batch (store returns how many of a batch it stored); it returns how many
// store stored, which is what an error leaves too. A line that is not a
// valid plant stops it with a *LineError.
func Load(r io.Reader, o Options, batch int, store func([]*plantstore.Plant) (int, error)) (stored int, err error) {
	plants := make([]*plantstore.Plant, 0, batch)
	flush := func() error {
		if len(plants) == 0 {
			return nil
		}
		n, err := store(plants)
		stored += n
		plants = plants[:0]
		return err
	}
	_, err = scan(r, o, func(p *plantstore.Plant) error {
		plants = append(plants, p)
		if len(plants) == batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return stored, err
}

// scan reads r's lines, calling each (if set) with every plant, and
// returns how many there were; the first bad line stops it.
func scan(r io.Reader, o Options, each func(*plantstore.Plant) error) (int, error) {
	lr := NewReader(r, o)
	n := 0
	for {
		l, err := lr.Read()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if l.Err != nil {
			return n, &LineError{l.Number, l.Err}
		}
		n++
		if each != nil {
			if err := each(l.Plant); err != nil {
				return n, err
			}
		}
	}
}

// LineError is a line of Count's or Load's input that is not a valid
// plant.
type LineError struct {
	Number int   // the line, from 1
	Err    error // why: Line.Err
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Number, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }
