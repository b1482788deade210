package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore"
)

// importItem is one line (or CSV record, or array element) of the input.
type importItem struct {
	line  int
	plant *plantstore.Plant // nil when invalid
	err   string            // why the line is invalid
}

// importRecord is a line of JSON input.
type importRecord struct {
	ID   *int64  `json:"id"`
	Name *string `json:"name"`
	Tag  *string `json:"tag"`
}

// item checks a record against the contract's limits.
func (r importRecord) item(line int) importItem {
	it := importItem{line: line}
	switch {
	case r.ID == nil:
		it.err = "id is missing"
	case r.Name == nil:
		it.err = "name is missing"
	default:
		p := &plantstore.Plant{ID: *r.ID, Name: *r.Name, Tag: r.Tag}
		if err := p.Validate(); err != nil {
			var pe *plantstore.Error
			if errors.As(err, &pe) {
				it.err = strings.TrimPrefix(pe.Message, "invalid NewPlant: ")
			} else {
				it.err = err.Error()
			}
		} else {
			it.plant = p
		}
	}
	return it
}

// parseJSON reads JSON lines (blank lines skipped) or, when the input starts
// with '[', one JSON array whose elements are numbered by the line they
// start on.
func parseJSON(data []byte) ([]importItem, error) {
	var items []importItem
	if trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(trimmed) > 0 && trimmed[0] == '[' {
		offset := len(data) - len(trimmed)
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		for dec.More() {
			// The element starts after the separator and whitespace.
			start := offset + int(dec.InputOffset())
			start += len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n,"))
			line := 1 + bytes.Count(data[:start], []byte("\n"))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			items = append(items, jsonItem(raw, line))
		}
		return items, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\ufeff"))
		}
		if len(text) == 0 {
			continue
		}
		items = append(items, jsonItem(text, line))
	}
	return items, sc.Err()
}

func jsonItem(raw []byte, line int) importItem {
	var r importRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return importItem{line: line, err: "not a JSON plant object: " + err.Error()}
	}
	return r.item(line)
}

// parseCSV reads CSV with a header row naming the columns id, name and,
// optionally, tag; an empty tag is none.
func parseCSV(data []byte) ([]importItem, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, name := range []string{"id", "name"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("csv header %q: no %q column", strings.Join(header, ","), name)
		}
	}
	tagCol, hasTag := col["tag"]
	var items []importItem
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return items, nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			items = append(items, importItem{line: pe.StartLine, err: "not CSV: " + pe.Err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			items = append(items, importItem{line: line, err: fmt.Sprintf("%d fields, want %d", len(rec), len(header))})
			continue
		}
		var rr importRecord
		if s := strings.TrimSpace(rec[col["id"]]); s != "" {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				items = append(items, importItem{line: line, err: fmt.Sprintf("id %q is not an int64", s)})
				continue
			}
			rr.ID = &id
		}
		rr.Name = &rec[col["name"]]
		if hasTag && rec[tagCol] != "" {
			rr.Tag = &rec[tagCol]
		}
		items = append(items, rr.item(line))
	}
}
