package main

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

	"github.com/plantstore/plantstore"
)

// importItem is one line (or CSV record, or array element) of the input.
type importItem struct {
	line  int
	plant *plantstore.Plant // nil when invalid
	err   string            // why the line is invalid
	input string            // the line's text (a CSV record's, an array element's), for --rejects
}

// parseInput parses data, named name (a file name, or - for stdin), in
// format: jsonl, csv, or auto: by the name's extension (.csv; .jsonl,
// .json, .ndjson), else by the content (sniffFormat).
func parseInput(data []byte, name, format string) ([]importItem, error) {
	if format == "auto" {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".csv":
			format = "csv"
		case ".jsonl", ".json", ".ndjson":
			format = "jsonl"
		default:
			format = sniffFormat(data)
		}
	}
	if format == "csv" {
		return parseCSV(data)
	}
	return parseJSON(data)
}

// sniffFormat tells JSON from CSV by the first byte that is not blank (or a
// byte order mark): { or [ is JSON (lines or an array), anything else CSV,
// whose header cannot start with either.
func sniffFormat(data []byte) string {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] == '{' || trimmed[0] == '[' {
		return "jsonl"
	}
	return "csv"
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
			it := jsonItem(raw, line)
			it.input = string(raw)
			items = append(items, it)
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
		it := jsonItem(text, line)
		it.input = string(text)
		items = append(items, it)
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
	body := bytes.TrimPrefix(data, []byte("\ufeff"))
	r := csv.NewReader(bytes.NewReader(body))
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
		start := r.InputOffset()
		rec, err := r.Read()
		if err == io.EOF {
			return items, nil
		}
		// The record's text, for --rejects: from the end of the previous
		// record to the end of this one, without the line break.
		input := strings.TrimRight(string(body[start:r.InputOffset()]), "\r\n")
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			items = append(items, importItem{line: pe.StartLine, err: "not CSV: " + pe.Err.Error(), input: input})
			continue
		}
		if err != nil {
			return nil, err
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			items = append(items, importItem{line: line, err: fmt.Sprintf("%d fields, want %d", len(rec), len(header)), input: input})
			continue
		}
		var rr importRecord
		if s := strings.TrimSpace(rec[col["id"]]); s != "" {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				items = append(items, importItem{line: line, err: fmt.Sprintf("id %q is not an int64", s), input: input})
				continue
			}
			rr.ID = &id
		}
		rr.Name = &rec[col["name"]]
		if hasTag && rec[tagCol] != "" {
			rr.Tag = &rec[tagCol]
		}
		it := rr.item(line)
		it.input = input
		items = append(items, it)
	}
}
