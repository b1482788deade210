// Package plantlines reads plants from text, one plant a line: JSON lines
// (or one JSON array of plant objects) or CSV with a header. It is the one
// reader of `plantstore import`, `plantstore plants import` and `plantstore
// serve --seed`, so that the three take the same lines.
//
// A JSON plant is taken exactly when POST /plants would take it as its body
// (a NewPlant), read by the same code as POST /plants: the text checks of
// internal/jsonvalue, the generated decoder and validators of oapi.NewPlant
// and, for a line they refuse, the contract's validator (internal/apischema)
// saying why in the API's words. CSV has equivalent checks.
// docs/architecture.md (internal/plantlines) lists them.
//
// A line that is not a valid plant is not an error of the reader: its
// Line.Err says why, and the caller decides (the three commands store
// nothing when any line is bad). Read fails only when the input cannot be
// read on.
package plantlines

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-faster/jx"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/apischema"
	"github.com/plantstore/plantstore/internal/http/oapi"
	"github.com/plantstore/plantstore/internal/jsonvalue"
)

// The formats Options.Format names.
const (
	Auto      = "auto"  // by the name's extension, else by the first byte
	JSONLines = "jsonl" // JSON lines, or one JSON array
	CSV       = "csv"   // CSV with a header row
)

// MaxLineBytes bounds one JSON line: the API's limit of a request body.
const MaxLineBytes = plantstore.MaxBodyBytes

// ErrNoOwner is a line without an owner when Options.Owners asks for one
// and Options.DefaultOwner gives none.
var ErrNoOwner = errors.New("owner: required")

// Options says how to read an input.
type Options struct {
	// Format is JSONLines, CSV, or Auto (also ""): by Name's extension
	// (.csv is CSV; .jsonl, .json and .ndjson JSON), otherwise by the
	// first byte that is not blank (or a byte order mark): { or [ is JSON,
	// anything else CSV (whose header cannot start with either).
	Format string
	Name   string // the input's file name, for Auto ("-" or "": none)
	// Owners reads each line's owner (plantstore export's format): the
	// member "owner" (a string) of a JSON line, the column owner of CSV;
	// a line without one gets DefaultOwner, and with DefaultOwner empty
	// it is invalid (ErrNoOwner). Owners are trimmed, then checked with
	// plantstore.ValidateOwner. Without Owners an "owner" member is one
	// the API ignores, and Plant.Owner is left empty.
	Owners       bool
	DefaultOwner string
}

// Line is one plant of the input: a JSON line, an element of a JSON array,
// or a CSV record.
type Line struct {
	Number int               // the line it starts on, from 1
	Text   string            // its text without the line break (reports, --rejects)
	Plant  *plantstore.Plant // the plant; nil when Err is set
	Err    error             // why it is not a valid plant; nil when it is one
}

// Reader reads the lines of one input.
type Reader struct {
	opt    Options
	br     *bufio.Reader
	format string // JSONLines or CSV once decided
	line   int    // JSON lines: the lines read so far
	buf    []byte

	// One JSON array, or CSV: the whole input, read at the first Read.
	all     bool
	items   []Line
	next    int
	fatal   error // after the items: why the input cannot be read on
	started bool
}

// NewReader returns a reader of r's lines.
func NewReader(r io.Reader, opt Options) *Reader {
	return &Reader{opt: opt, br: bufio.NewReaderSize(r, 64<<10)}
}

// ReadAll reads every line of data.
func ReadAll(data []byte, opt Options) ([]Line, error) {
	r := NewReader(bytes.NewReader(data), opt)
	var out []Line
	for {
		l, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
}

// Read returns the next line, valid or not (Line.Err), skipping blank JSON
// lines; io.EOF after the last. Any other error means the input cannot be
// read on, and names the line: a read error, a JSON line longer than
// MaxLineBytes, a CSV header that does not name id and name or names a
// column twice, a JSON array that does not parse.
func (r *Reader) Read() (Line, error) {
	if !r.started {
		r.started = true
		if err := r.start(); err != nil {
			return Line{}, err
		}
	}
	if r.all {
		if r.next < len(r.items) {
			r.next++
			return r.items[r.next-1], nil
		}
		if r.fatal != nil {
			return Line{}, r.fatal
		}
		return Line{}, io.EOF
	}
	for {
		text, err := r.readLine()
		if err != nil {
			return Line{}, err
		}
		r.line++
		if len(text) == 0 {
			continue
		}
		l := Line{Number: r.line, Text: string(text)}
		l.Plant, l.Err = r.parseJSON(text)
		return l, nil
	}
}

// start drops a byte order mark, decides the format and, for a JSON array
// or CSV, reads the whole input.
func (r *Reader) start() error {
	if bom, _ := r.br.Peek(3); string(bom) == "\ufeff" {
		r.br.Discard(3)
	}
	r.format = r.opt.Format
	if r.format == "" || r.format == Auto {
		r.format = r.sniff()
	}
	switch r.format {
	case JSONLines:
		if r.firstByte() != '[' {
			return nil
		}
	case CSV:
	default:
		return fmt.Errorf("plantlines: unknown format %q", r.opt.Format)
	}
	data, err := io.ReadAll(r.br)
	if err != nil {
		return err
	}
	r.all = true
	if r.format == CSV {
		r.items, r.fatal = r.readCSV(data)
	} else {
		r.items, r.fatal = r.readArray(data)
	}
	return nil
}

// sniff decides Auto's format.
func (r *Reader) sniff() string {
	switch strings.ToLower(filepath.Ext(r.opt.Name)) {
	case ".csv":
		return CSV
	case ".jsonl", ".json", ".ndjson":
		return JSONLines
	}
	if c := r.firstByte(); c == 0 || c == '{' || c == '[' {
		return JSONLines
	}
	return CSV
}

// firstByte is the input's first byte that is not blank (within the first
// 64 KiB), or 0.
func (r *Reader) firstByte() byte {
	head, _ := r.br.Peek(r.br.Size())
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return 0
	}
	return trimmed[0]
}

// readLine returns the next JSON line without its line break and the blank
// around it (JSON's: space, tab, CR, LF).
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxLineBytes+2 { // room for "\r\n"
			return nil, fmt.Errorf("line %d: longer than %d bytes (the API's limit of a body)", r.line+1, MaxLineBytes)
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(r.buf) > 0:
		case err == io.EOF:
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("line %d: %w", r.line+1, err)
		}
		return bytes.Trim(r.buf, " \t\r\n"), nil
	}
}

// readArray reads one JSON array of plant objects, each element numbered
// by the line it starts on.
func (r *Reader) readArray(data []byte) ([]Line, error) {
	lineAt := func(off int) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("line 1: not a JSON array: %v", err)
	}
	var items []Line
	for dec.More() {
		// The element starts after the separator and white space.
		start := int(dec.InputOffset())
		start += len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n,"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return items, fmt.Errorf("line %d: not a JSON array of plants: %v", lineAt(start), err)
		}
		l := Line{Number: lineAt(start), Text: string(raw)}
		l.Plant, l.Err = r.parseJSON(raw)
		items = append(items, l)
	}
	end := int(dec.InputOffset())
	if _, err := dec.Token(); err != nil {
		return items, fmt.Errorf("line %d: not a JSON array of plants: %v", lineAt(end), err)
	}
	rest := int(dec.InputOffset())
	if trimmed := bytes.TrimLeft(data[rest:], " \t\r\n"); len(trimmed) > 0 {
		return items, fmt.Errorf("line %d: data after the JSON array", lineAt(len(data)-len(trimmed)))
	}
	return items, nil
}

// newPlant is the contract's NewPlant, whose validator explains a line the
// generated decoder refuses, in the API's words; compiled on the first
// refusal, so that a command that reads only valid lines never pays for it.
var newPlant = sync.OnceValues(func() (*apischema.Body, error) { return apischema.Component("NewPlant") })

// decodeNewPlant decodes a NewPlant as the generated server decodes the
// body of POST /plants: the generated decoder, nothing after the value,
// then the generated validators.
func decodeNewPlant(text []byte, np *oapi.NewPlant) error {
	d := jx.DecodeBytes(text)
	if err := np.Decode(d); err != nil {
		return err
	}
	if err := d.Skip(); err != io.EOF {
		return errors.New("unexpected trailing data")
	}
	return np.Validate()
}

// ownerMember reads the member "owner" of a plant object (export's
// format), nil when there is none.
func ownerMember(text []byte) (*string, error) {
	var (
		owner   *string
		typeErr error
	)
	err := jx.DecodeBytes(text).ObjBytes(func(d *jx.Decoder, key []byte) error {
		if string(key) != "owner" {
			return d.Skip()
		}
		if d.Next() != jx.String {
			typeErr = errors.New("owner: must be a string")
			return d.Skip()
		}
		s, err := d.Str()
		owner = &s
		return err
	})
	switch {
	case typeErr != nil:
		return nil, typeErr
	case err != nil: // cannot be: jsonvalue.Check found the text well-formed
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return owner, nil
}

// parseJSON reads one plant object as the API reads a NewPlant (see the
// package comment): the same generated decoder, and the same validator to
// say why a line is refused.
func (r *Reader) parseJSON(text []byte) (*plantstore.Plant, error) {
	if len(text) > MaxLineBytes {
		return nil, fmt.Errorf("longer than %d bytes (the API's limit of a body)", MaxLineBytes)
	}
	switch err := jsonvalue.Check(text); {
	case err == nil:
	case errors.Is(err, jsonvalue.ErrNotUTF8):
		return nil, errors.New("not valid UTF-8")
	case errors.Is(err, jsonvalue.ErrNotJSON), errors.Is(err, jsonvalue.ErrEmpty):
		return nil, errors.New("not valid JSON (or more than one JSON value)")
	default:
		return nil, err // a *jsonvalue.ValueError: duplicate key "id", name: must not contain ...
	}
	var np oapi.NewPlant
	if err := decodeNewPlant(text, &np); err != nil {
		schema, xerr := newPlant()
		if xerr != nil {
			return nil, xerr
		}
		msg, xerr := schema.Explain(text)
		switch {
		case errors.Is(xerr, apischema.ErrNotObject):
			return nil, errors.New("must be a JSON object (a plant)")
		case xerr != nil:
			return nil, xerr
		case msg == "":
			// The contract's validator finds nothing the generated
			// decoder refused: say what the decoder says.
			return nil, err
		}
		return nil, errors.New(msg)
	}
	p := plantstore.Plant{ID: np.ID, Name: np.Name}
	if tag, ok := np.Tag.Get(); ok {
		p.Tag = &tag
	}
	var owner *string
	if r.opt.Owners {
		o, err := ownerMember(text)
		if err != nil {
			return nil, err
		}
		owner = o
	}
	return r.finish(&p, owner)
}

// finish sets p's owner (with Options.Owners; trimmed of the white space
// around it, as token creation trims an owner) and checks p against the
// limits of a new plant.
func (r *Reader) finish(p *plantstore.Plant, owner *string) (*plantstore.Plant, error) {
	if r.opt.Owners {
		switch {
		case owner != nil:
			p.Owner = strings.TrimSpace(*owner)
		case r.opt.DefaultOwner != "":
			p.Owner = r.opt.DefaultOwner
		default:
			return nil, ErrNoOwner
		}
		if err := plantstore.ValidateOwner(p.Owner); err != nil {
			return nil, errors.New(message(err))
		}
	}
	if err := p.Validate(); err != nil {
		return nil, errors.New(strings.TrimPrefix(message(err), "invalid NewPlant: "))
	}
	return p, nil
}

// message is a domain error's message (without its code).
func message(err error) string {
	var e *plantstore.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// readCSV reads CSV with a header row naming the columns id, name and,
// optionally, tag (and owner, with Options.Owners), in any order and case,
// each at most once; other columns are ignored. An empty tag is none; an
// empty owner is the default one.
func (r *Reader) readCSV(data []byte) ([]Line, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("line 1: csv header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		if !utf8.ValidString(h) {
			return nil, fmt.Errorf("line 1: csv header: not valid UTF-8")
		}
		name := strings.ToLower(strings.TrimSpace(h))
		if _, ok := col[name]; ok && name != "" {
			return nil, fmt.Errorf("line 1: csv header: column %q given twice", name)
		}
		col[name] = i
	}
	for _, name := range []string{"id", "name"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("line 1: csv header %q: no %q column", strings.Join(header, ","), name)
		}
	}
	field := func(rec []string, name string) (string, bool) {
		i, ok := col[name]
		if !ok {
			return "", false
		}
		return rec[i], true
	}
	var items []Line
	for {
		start := cr.InputOffset()
		rec, err := cr.Read()
		if err == io.EOF {
			return items, nil
		}
		// The record's text: from the end of the previous record to the
		// end of this one, without the line break.
		text := strings.TrimRight(string(data[start:cr.InputOffset()]), "\r\n")
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			items = append(items, Line{Number: pe.StartLine, Text: text, Err: fmt.Errorf("not CSV: %v", pe.Err)})
			continue
		}
		if err != nil {
			return items, err
		}
		line, _ := cr.FieldPos(0)
		l := Line{Number: line, Text: text}
		l.Plant, l.Err = r.parseRecord(rec, len(header), field)
		items = append(items, l)
	}
}

// parseRecord reads one CSV record.
func (r *Reader) parseRecord(rec []string, want int, field func([]string, string) (string, bool)) (*plantstore.Plant, error) {
	if len(rec) != want {
		return nil, fmt.Errorf("%d fields, want %d", len(rec), want)
	}
	for _, f := range rec {
		if !utf8.ValidString(f) {
			return nil, errors.New("not valid UTF-8")
		}
	}
	var p plantstore.Plant
	idText, _ := field(rec, "id")
	switch s := strings.TrimSpace(idText); {
	case s == "":
		return nil, errors.New("id: required")
	default:
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64), not %q", s)
		}
		p.ID = id
	}
	p.Name, _ = field(rec, "name")
	if tag, ok := field(rec, "tag"); ok && tag != "" {
		p.Tag = &tag
	}
	var owner *string
	if o, ok := field(rec, "owner"); ok && o != "" && r.opt.Owners {
		owner = &o
	}
	return r.finish(&p, owner)
}
