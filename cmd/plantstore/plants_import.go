package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
)

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
