package plantlines

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
)

// Writer writes plants as JSON lines with their owner, the format
// `plantstore export` writes and `plantstore import` reads: one object a
// line, {"owner":…,"id":…,"name":…,"tag":…}, tag left out when the plant
// has none. It is the contract's Plant with its owner, so a line without
// "owner" is a NewPlant, which `plants import` and import --owner take too.
type Writer struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// exportLine is one line of the format.
type exportLine struct {
	Owner string  `json:"owner"`
	ID    int64   `json:"id"`
	Name  string  `json:"name"`
	Tag   *string `json:"tag,omitempty"`
}

// NewWriter returns a Writer to w; Flush writes what it buffers.
func NewWriter(w io.Writer) *Writer {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &Writer{w: bw, enc: enc}
}

// Write writes p as one line.
func (w *Writer) Write(p *plantstore.Plant) error {
	return w.enc.Encode(&exportLine{Owner: p.Owner, ID: p.ID, Name: p.Name, Tag: p.Tag})
}

// Flush writes the buffered lines to the underlying writer.
func (w *Writer) Flush() error { return w.w.Flush() }

// Export writes the plants of snap, by owner then id, as lines to w: every
// owner's, or only owner's when owner is not empty. It returns how many it
// wrote.
func Export(ctx context.Context, snap portable.Snapshot, w io.Writer, owner string) (int, error) {
	out := NewWriter(w)
	n := 0
	for row, err := range snap.Rows(ctx, portable.TableNamed("plants")) {
		if err != nil {
			return n, err
		}
		p := plantstore.Plant{Owner: row[0].(string), ID: row[1].(int64), Name: row[2].(string)}
		if owner != "" && p.Owner != owner {
			continue
		}
		if tag, ok := row[3].(string); ok {
			p.Tag = &tag
		}
		if err := out.Write(&p); err != nil {
			return n, err
		}
		n++
	}
	return n, out.Flush()
}
