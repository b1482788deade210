package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
)

// plantsCmd is `plantstore plants`: a client of a running server.
type plantsCmd struct {
	Create plantsCreateCmd `cmd:"" help:"Create a plant (idempotent: the same plant again is not an error)."`
	Get    plantsGetCmd    `cmd:"" help:"Print a plant."`
	List   plantsListCmd   `cmd:"" help:"List plants, one page or --all of them."`
	Delete plantsDeleteCmd `cmd:"" help:"Delete a plant."`
	Import plantsImportCmd `cmd:"" help:"Create the plants of a JSON lines or CSV file, concurrently."`
}

// clientFlags are the flags of every `plants` command.
type clientFlags struct {
	Server string `default:"http://127.0.0.1:8080" env:"PLANTSTORE_SERVER" help:"Base URL of the Plant Store server."`
	Token  string `required:"" env:"PLANTSTORE_TOKEN" help:"Bearer token (plantstore token create)."`
}

func (f *clientFlags) client() (*client.Client, error) {
	return client.New(f.Server, f.Token)
}

// formatFlag selects the output of the commands that print plants.
type formatFlag struct {
	Format string `default:"json" enum:"json,table" help:"Output format: json or table."`
}

// print writes plants as a JSON value (one must be an object, else an array)
// or as a table.
func (f formatFlag) print(w io.Writer, plants []client.Plant, one bool) error {
	if f.Format == "table" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTAG")
		for _, p := range plants {
			tag := ""
			if p.Tag != nil {
				tag = *p.Tag
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.ID, p.Name, tag)
		}
		return tw.Flush()
	}
	var v any = plants
	if one {
		v = plants[0]
	} else if plants == nil {
		v = []client.Plant{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type plantsCreateCmd struct {
	clientFlags
	formatFlag
	ID   int64   `arg:"" help:"Id of the plant (int64)."`
	Name string  `arg:"" help:"Name (1 to 256 characters)."`
	Tag  *string `help:"Tag (at most 64 characters)."`
}

// Run creates the plant and prints the stored one.
func (c *plantsCreateCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.CreatePlant(ctx, c.ID, c.Name, c.Tag)
	if err != nil {
		return err
	}
	return c.print(e.stdout, []client.Plant{*p}, true)
}

type plantsGetCmd struct {
	clientFlags
	formatFlag
	ID int64 `arg:"" help:"Id of the plant."`
}

// Run prints the plant.
func (c *plantsGetCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.GetPlant(ctx, c.ID)
	if err != nil {
		return err
	}
	return c.print(e.stdout, []client.Plant{*p}, true)
}

type plantsDeleteCmd struct {
	clientFlags
	ID int64 `arg:"" help:"Id of the plant."`
}

// Run deletes the plant; it prints nothing.
func (c *plantsDeleteCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.DeletePlant(ctx, c.ID)
}

type plantsListCmd struct {
	clientFlags
	formatFlag
	All   bool    `help:"Follow the Link header through every page and print all plants."`
	Limit int     `help:"Page size (1..1000); default: the server's (100)."`
	After *int64  `help:"Only plants whose id is greater (the cursor of the next page)."`
	Tag   *string `help:"Only plants with exactly this tag."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// plants.
func (c *plantsListCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListOptions{Limit: c.Limit, After: c.After, Tag: c.Tag}
	if !c.All {
		page, err := cl.ListPlants(ctx, opts)
		if err != nil {
			return err
		}
		if err := c.print(e.stdout, page.Plants, false); err != nil {
			return err
		}
		if page.Next != nil && page.Next.After != nil {
			fmt.Fprintf(e.stderr, "more plants follow: --after %d (or --all)\n", *page.Next.After)
		}
		return nil
	}
	var plants []client.Plant
	for p, err := range cl.AllPlants(ctx, opts) {
		if err != nil {
			return err
		}
		plants = append(plants, p)
	}
	return c.print(e.stdout, plants, false)
}

type plantsImportCmd struct {
	clientFlags
	File        string `arg:"" type:"path" help:"File to import; - reads stdin (with --input-format)."`
	InputFormat string `default:"auto" enum:"auto,jsonl,csv" help:"auto (by extension: .csv is CSV; .jsonl, .json and others JSON lines), jsonl or csv."`
	Concurrency int    `default:"8" help:"Creates in flight at once."`
	Resume      bool   `help:"GET each plant first: one already stored identically counts as replayed and is not sent again; one stored differently counts as conflicted."`
}

// Help explains the input and the counts.
func (c *plantsImportCmd) Help() string {
	return `Input: JSON lines, one {"id": 1, "name": "Monstera", "tag": "indoor"} per line
(tag optional; a .json file may also hold one JSON array), or CSV with a
header naming the columns id, name and optionally tag (an empty tag is none).

Counts at the end:
  created     the server answered 200. Its create answer does not say whether
              the plant was new or an identical replay, so without --resume a
              plant that was already stored identically also counts as created.
  replayed    with --resume only: a GET found the plant stored identically, so
              it was not sent.
  conflicted  the plant exists with a different name or tag (409, or the GET
              of --resume).
  invalid     rejected locally (not JSON, no id, empty or too long name or
              tag, ...) or answered 400; the first few line numbers are shown.
  failed      shown only when not 0: the server or network failed after
              retries (429 answers are retried after Retry-After).

Creates are idempotent, so an interrupted import can be run again; --resume
makes the second run skip what is stored and tell replays apart. The command
exits 1 when any line is conflicted, invalid or failed.`
}

// importItem is one line (or CSV record, or array element) of the input.
type importItem struct {
	line  int
	plant *plantstore.Plant // nil when invalid
	err   string            // why the line is invalid
}

// importOutcome is what became of one item.
type importOutcome int

const (
	outcomeCreated importOutcome = iota
	outcomeReplayed
	outcomeConflicted
	outcomeInvalid
	outcomeFailed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"created", "replayed", "conflicted", "invalid", "failed"}

// maxListed is how many lines of each unsuccessful outcome the summary lists.
const maxListed = 5

type importResult struct {
	line    int
	outcome importOutcome
	detail  string
}

// Run reads the whole input, sends the creates with bounded concurrency and
// prints the counts.
func (c *plantsImportCmd) Run(ctx context.Context, e *env) error {
	if c.Concurrency < 1 {
		return fmt.Errorf("--concurrency: must be at least 1, got %d", c.Concurrency)
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	var data []byte
	if c.File == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(c.File)
	}
	if err != nil {
		return fmt.Errorf("plants import: %w", err)
	}
	format := c.InputFormat
	if format == "auto" {
		format = "jsonl"
		if strings.EqualFold(filepath.Ext(c.File), ".csv") {
			format = "csv"
		}
	}
	var items []importItem
	if format == "csv" {
		items, err = parseCSV(data)
	} else {
		items, err = parseJSON(data)
	}
	if err != nil {
		return fmt.Errorf("plants import: %s: %w", c.File, err)
	}

	var bar *progressbar.ProgressBar
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(items),
			progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription("importing"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("plants"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]importResult, len(items))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(c.Concurrency, max(len(items), 1)) {
		wg.Go(func() {
			for i := range work {
				results[i] = c.importOne(ctx, cl, items[i])
				if fatal := results[i].fatal(); fatal != nil {
					cancel(fatal)
				}
				if bar != nil {
					bar.Add(1)
				}
			}
		})
	}
feed:
	for i := range items {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if bar != nil {
		bar.Finish()
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("plants import: stopped: %w", err)
	}
	return c.report(e.stdout, results)
}

// fatal is the error that stops the whole import: the token is refused, so
// no other line can succeed either.
func (r importResult) fatal() error {
	if r.outcome == outcomeFailed && strings.HasPrefix(r.detail, "token: ") {
		return errors.New(strings.TrimPrefix(r.detail, "token: "))
	}
	return nil
}

// report prints the first few unsuccessful lines of each kind and the counts.
func (c *plantsImportCmd) report(w io.Writer, results []importResult) error {
	var counts [numOutcomes]int
	for _, r := range results {
		counts[r.outcome]++
		if r.outcome >= outcomeConflicted && counts[r.outcome] <= maxListed {
			fmt.Fprintf(w, "%s: line %d: %s\n", outcomeNames[r.outcome], r.line, r.detail)
		}
	}
	for o := outcomeConflicted; o < numOutcomes; o++ {
		if n := counts[o] - maxListed; n > 0 {
			fmt.Fprintf(w, "%s: %d more lines\n", outcomeNames[o], n)
		}
	}
	summary := fmt.Sprintf("created %d, replayed %d, conflicted %d, invalid %d",
		counts[outcomeCreated], counts[outcomeReplayed], counts[outcomeConflicted], counts[outcomeInvalid])
	if counts[outcomeFailed] > 0 {
		summary += fmt.Sprintf(", failed %d", counts[outcomeFailed])
	}
	if _, err := fmt.Fprintln(w, summary); err != nil {
		return err
	}
	if counts[outcomeConflicted]+counts[outcomeInvalid]+counts[outcomeFailed] > 0 {
		return exitCode(1)
	}
	return nil
}

// importOne creates one plant: with --resume it GETs it first.
func (c *plantsImportCmd) importOne(ctx context.Context, cl *client.Client, it importItem) importResult {
	res := importResult{line: it.line}
	if it.plant == nil {
		res.outcome, res.detail = outcomeInvalid, it.err
		return res
	}
	p := it.plant
	if c.Resume {
		var stored *client.Plant
		err := retry(ctx, func() (err error) {
			stored, err = cl.GetPlant(ctx, p.ID)
			return err
		})
		var apiErr *client.Error
		switch {
		case err == nil:
			if (&plantstore.Plant{ID: stored.ID, Name: stored.Name, Tag: stored.Tag}).SameContent(p) {
				res.outcome = outcomeReplayed
			} else {
				res.outcome = outcomeConflicted
				res.detail = fmt.Sprintf("plant %d is stored with a different name or tag", p.ID)
			}
			return res
		case errors.As(err, &apiErr) && apiErr.Code == plantstore.CodeNotFound:
			// Not stored yet: create it.
		default:
			return failed(res, err)
		}
	}
	err := retry(ctx, func() error {
		_, err := cl.CreatePlant(ctx, p.ID, p.Name, p.Tag)
		return err
	})
	var apiErr *client.Error
	switch {
	case err == nil:
		res.outcome = outcomeCreated
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict:
		res.outcome, res.detail = outcomeConflicted, apiErr.Message
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest:
		res.outcome, res.detail = outcomeInvalid, apiErr.Message
	default:
		return failed(res, err)
	}
	return res
}

// failed records err; a refused token is marked fatal.
func failed(res importResult, err error) importResult {
	res.outcome, res.detail = outcomeFailed, err.Error()
	var apiErr *client.Error
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusUnauthorized || apiErr.Status == http.StatusForbidden) {
		res.detail = "token: " + apiErr.Error()
	}
	return res
}

// retry calls fn until it succeeds, fails for good, or five attempts have
// failed: 429 waits Retry-After (at least 100 ms), 5xx and network errors
// back off from 200 ms.
func retry(ctx context.Context, fn func() error) error {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt == 5 || ctx.Err() != nil {
			return err
		}
		wait := backoff
		var apiErr *client.Error
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests:
			wait = max(apiErr.RetryAfter, 100*time.Millisecond)
		case errors.As(err, &apiErr) && apiErr.Status < 500:
			return err
		}
		backoff *= 2
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
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
