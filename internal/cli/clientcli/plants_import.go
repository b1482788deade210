package clientcli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/outfile"
	"github.com/plantstore/plantstore/internal/plantlines"
)

type plantsImportCmd struct {
	clientFlags
	File        string `arg:"" type:"path" help:"File to import; - reads stdin."`
	InputFormat string `default:"auto" enum:"auto,jsonl,csv" help:"auto (by extension, else by the first byte), jsonl or csv."`
	Concurrency int    `default:"4" help:"Requests in flight at once (batches, or single creates against a server without POST /plants/batch)."`
	BatchSize   int    `default:"1000" help:"Plants a request creates (POST /plants/batch), at most the server's --batch-max; 1 sends single creates."`
	Atomic      bool   `help:"All or nothing: the whole file in one batch, one transaction (refused when it has more than --batch-size plants)."`
	Resume      bool   `help:"GET each plant first: send only those not stored yet."`
	Rejects     string `type:"path" placeholder:"FILE" help:"Write every conflicted, invalid or failed line to FILE."`

	// reached is set once the server has answered anything: until then a
	// connection that fails stops the import at once.
	reached atomic.Bool
	// single is set once the server answered a batch with 404 or 405 (a
	// plantstore without POST /plants/batch): the rest goes one by one.
	single atomic.Bool
}

// Help explains the input and the counts.
func (c *plantsImportCmd) Help() string {
	return `Input: JSON lines, one {"id": 1, "name": "Monstera", "tag": "indoor"} per line
(tag optional; the input may also hold one JSON array), or CSV with a
header naming the columns id, name and optionally tag (an empty tag is none).
The format comes from the extension, else from the first byte (stdin too).
A JSON line must be a body POST /plants takes: valid UTF-8, no key twice,
no lone surrogate escape, members named exactly id, name and tag (others
are ignored, as the API ignores them), id an int64, name and tag strings
(leave tag out for none; null is refused), within the limits.

The plants are sent in batches (POST /plants/batch, --batch-size plants a
request, --concurrency requests at once), each batch one transaction on the
server. A batch refused for one line (a conflict, a line the server finds
invalid) is sent again without it, so every other line is still created. A
server without POST /plants/batch (it answers 404 or 405) gets single creates
(POST /plants) instead. --atomic sends the whole file as one batch, or nothing:
it is refused before sending when the file has more than --batch-size plants,
and when any line is refused no plant of the file is stored (the others count
as not sent).

Every line is checked before anything is sent: when any line is invalid,
nothing is sent, the invalid lines are listed (all of them with --rejects)
and the command exits 1; fix them and import again.

Counts at the end:
  created     the server answered 200. Its create answer does not say whether
              the plant was new or an identical replay, so without --resume a
              plant that was already stored identically also counts as created.
  replayed    with --resume only: a GET found the plant stored identically, so
              it was not sent.
  conflicted  the plant exists with a different name or tag (409, or the GET
              of --resume).
  invalid     not a plant the API takes (not JSON, no id, empty or too long name or
              tag, ...: then nothing is sent), or answered 400; the first few
              line numbers are shown.
  failed      shown only when not 0: the server or network failed after
              retries (429 answers are retried after Retry-After).
  not sent    shown only when not 0: the import was interrupted (SIGINT,
              SIGTERM) before these lines were sent, or an invalid line stopped
              it before anything was sent.

--rejects FILE lists every conflicted, invalid and failed line with its
reason, one JSON object a line.

On SIGINT or SIGTERM the import sends nothing more, waits for the creates in
flight, prints the counts and exits 130 (SIGINT) or 143 (SIGTERM). When the
server cannot be reached at all (no connection to --server), it stops at the
first line. Creates are idempotent, so an interrupted import can be run
again; --resume makes the second run skip what is stored and tell replays
apart. The command exits 1 when any line is conflicted, invalid or failed.`
}

// importOutcome is what became of one item.
type importOutcome int

const (
	outcomeCreated importOutcome = iota
	outcomeReplayed
	outcomeConflicted
	outcomeInvalid
	outcomeFailed
	outcomeNotSent
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"created", "replayed", "conflicted", "invalid", "failed", "not sent"}

// maxListed is how many lines of each unsuccessful outcome the summary lists.
const maxListed = 5

type importResult struct {
	line    int
	outcome importOutcome
	detail  string
	// fatal stops the whole import: the token is refused, or the server
	// cannot be reached, so no other line can succeed either.
	fatal error
}

// Run reads the whole input, sends the creates with bounded concurrency and
// prints the counts. When ctx ends (SIGINT, SIGTERM) it sends nothing more,
// waits for the creates in flight and prints the counts.
func (c *plantsImportCmd) Run(ctx context.Context, e *Env) error {
	if c.Concurrency < 1 {
		return cliexit.Usagef("--concurrency: must be at least 1, got %d", c.Concurrency)
	}
	if c.BatchSize < 1 {
		return cliexit.Usagef("--batch-size: must be at least 1, got %d", c.BatchSize)
	}
	if c.Atomic && c.Resume {
		return cliexit.Usagef("--atomic and --resume: choose one (--resume sends what is not stored yet, --atomic all of the file or nothing)")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	var data []byte
	if c.File == "-" {
		data, err = readInterruptible(ctx, os.Stdin)
	} else {
		data, err = os.ReadFile(c.File)
	}
	var exit cliexit.Code
	if errors.As(err, &exit) {
		return err
	}
	if err != nil {
		return fmt.Errorf("plants import: %w", err)
	}
	items, err := plantlines.ReadAll(data, plantlines.Options{Format: c.InputFormat, Name: c.File})
	if err != nil {
		return fmt.Errorf("plants import: %s: %w", c.File, err)
	}
	var rejects *os.File
	if c.Rejects != "" {
		// Truncated and written: never a database nor a file kept beside one.
		if err := outfile.Check(c.Rejects, true); err != nil {
			return fmt.Errorf("plants import: --rejects: %w", err)
		}
		if rejects, err = os.Create(c.Rejects); err != nil {
			return fmt.Errorf("plants import: --rejects: %w", err)
		}
		defer rejects.Close()
	}
	if invalid := c.invalidLines(items); invalid != nil {
		// Like plantstore import and serve --seed: a file with a bad line
		// stores nothing, so that fixing it and importing again is the
		// whole recovery.
		if rejects != nil {
			if err := writeRejects(rejects, items, invalid); err != nil {
				return fmt.Errorf("plants import: --rejects: %w", err)
			}
		}
		n := 0
		for _, r := range invalid {
			if r.outcome == outcomeInvalid {
				n++
			}
		}
		if err := c.report(e.Stdout, invalid); err != nil && !errors.As(err, &exit) {
			return err
		}
		return fmt.Errorf("plants import: nothing sent: %d invalid lines (each must be a plant POST /plants would take); fix them and import again", n)
	}
	if c.Atomic && len(items) > c.BatchSize {
		return cliexit.Usagef("--atomic: the file has %d plants, more than one batch holds (--batch-size %d, at most the server's --batch-max): nothing sent", len(items), c.BatchSize)
	}

	var bar *progressbar.ProgressBar
	if f, ok := e.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(items),
			progressbar.OptionSetWriter(e.Stderr),
			progressbar.OptionSetDescription("importing"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("plants"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}

	// Requests run on reqCtx, which an interrupt does not cancel (the
	// creates in flight finish); a fatal result cancels it. stop ends on
	// either: nothing more is sent, no attempt retried.
	reqCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop, stopNow := context.WithCancel(reqCtx)
	defer stopNow()
	var inFlight atomic.Int64
	unwatch := context.AfterFunc(ctx, func() {
		stopNow()
		fmt.Fprintf(e.Stderr, "plantstore: interrupted: sending nothing more, waiting for %d request(s) in flight\n", inFlight.Load())
	})
	defer unwatch()

	results := make([]importResult, len(items))
	for i, it := range items {
		results[i] = importResult{line: it.Number, outcome: outcomeNotSent}
	}
	// The work is batches of item indices, in input order.
	size := c.BatchSize
	if c.Atomic {
		size = max(len(items), 1)
	}
	var batches [][]int
	for start := 0; start < len(items); start += size {
		b := make([]int, 0, min(size, len(items)-start))
		for i := start; i < min(start+size, len(items)); i++ {
			b = append(b, i)
		}
		batches = append(batches, b)
	}
	work := make(chan []int)
	var wg sync.WaitGroup
	for range min(c.Concurrency, max(len(batches), 1)) {
		wg.Go(func() {
			for b := range work {
				c.importBatch(reqCtx, stop, cl, items, b, results)
				inFlight.Add(-1)
				for _, i := range b {
					if fatal := results[i].fatal; fatal != nil {
						cancel(fatal)
						break
					}
				}
				if bar != nil {
					bar.Add(len(b))
				}
			}
		})
	}
feed:
	for _, b := range batches {
		inFlight.Add(1)
		select {
		case work <- b:
		case <-stop.Done():
			inFlight.Add(-1)
			break feed
		}
	}
	close(work)
	wg.Wait()
	if bar != nil {
		bar.Finish()
	}
	if rejects != nil {
		if err := writeRejects(rejects, items, results); err != nil {
			return fmt.Errorf("plants import: --rejects: %w", err)
		}
	}
	if err := context.Cause(reqCtx); err != nil {
		return fmt.Errorf("plants import: stopped: %w", err)
	}
	err = c.report(e.Stdout, results)
	if cause := context.Cause(ctx); cause != nil {
		return cliexit.Interrupted(cause)
	}
	return err
}

// invalidLines returns, when any item is invalid, the results of an import
// that sends nothing: the invalid items with their reason, the others not
// sent; nil when every item is a plant.
func (c *plantsImportCmd) invalidLines(items []plantlines.Line) []importResult {
	var results []importResult
	for i, it := range items {
		if it.Err == nil {
			continue
		}
		if results == nil {
			results = make([]importResult, len(items))
			for j, it := range items {
				results[j] = importResult{line: it.Number, outcome: outcomeNotSent}
			}
		}
		results[i].outcome, results[i].detail = outcomeInvalid, it.Err.Error()
	}
	return results
}

// readInterruptible reads r to its end, or until ctx ends (Ctrl-C while a
// terminal is the input): then the exit status of the interrupt.
func readInterruptible(ctx context.Context, r io.Reader) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(r)
		done <- read{data, err}
	}()
	select {
	case res := <-done:
		return res.data, res.err
	case <-ctx.Done():
		return nil, cliexit.Interrupted(context.Cause(ctx))
	}
}

// rejectJSON is one line of --rejects.
type rejectJSON struct {
	Line    int    `json:"line"`
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
	Input   string `json:"input"`
}

// writeRejects writes every conflicted, invalid and failed line, in input
// order, as JSON lines.
func writeRejects(f *os.File, items []plantlines.Line, results []importResult) error {
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i, r := range results {
		if r.outcome < outcomeConflicted || r.outcome > outcomeFailed {
			continue
		}
		if err := enc.Encode(rejectJSON{Line: r.line, Outcome: outcomeNames[r.outcome], Error: r.detail, Input: items[i].Text}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// report prints the first few unsuccessful lines of each kind and the counts.
func (c *plantsImportCmd) report(w io.Writer, results []importResult) error {
	var counts [numOutcomes]int
	for _, r := range results {
		counts[r.outcome]++
		if r.outcome >= outcomeConflicted && r.outcome <= outcomeFailed && counts[r.outcome] <= maxListed {
			fmt.Fprintf(w, "%s: line %d: %s\n", outcomeNames[r.outcome], r.line, TextColumn(r.detail))
		}
	}
	for o := outcomeConflicted; o <= outcomeFailed; o++ {
		if n := counts[o] - maxListed; n > 0 {
			fmt.Fprintf(w, "%s: %d more lines\n", outcomeNames[o], n)
		}
	}
	summary := fmt.Sprintf("created %d, replayed %d, conflicted %d, invalid %d",
		counts[outcomeCreated], counts[outcomeReplayed], counts[outcomeConflicted], counts[outcomeInvalid])
	for _, o := range []importOutcome{outcomeFailed, outcomeNotSent} {
		if counts[o] > 0 {
			summary += fmt.Sprintf(", %s %d", outcomeNames[o], counts[o])
		}
	}
	if _, err := fmt.Fprintln(w, summary); err != nil {
		return err
	}
	if counts[outcomeConflicted]+counts[outcomeInvalid]+counts[outcomeFailed] > 0 {
		return cliexit.Code(1)
	}
	return nil
}

// importBatch creates the plants of items at the indices of batch and
// records each one's result: with --resume it GETs each first (resumed),
// then sends those not stored in one batch. A batch refused for one item
// (the answer's index) records that item's outcome and is sent again
// without it, unless --atomic; a server without the operation gets the
// rest as single creates (importOne). Its requests run on ctx; once stop
// ends, an attempt that failed is not retried.
func (c *plantsImportCmd) importBatch(ctx, stop context.Context, cl *client.Client, items []plantlines.Line, batch []int, results []importResult) {
	pending := batch
	if c.Resume {
		pending = nil
		for _, i := range batch {
			if res, stored := c.resumed(ctx, stop, cl, items[i]); stored {
				results[i] = res
			} else {
				pending = append(pending, i)
			}
		}
	}
	for len(pending) > 0 {
		if c.BatchSize == 1 || c.single.Load() {
			for _, i := range pending {
				results[i] = c.importOne(ctx, stop, cl, items[i])
			}
			return
		}
		plants := make([]client.NewPlant, len(pending))
		for j, i := range pending {
			p := items[i].Plant
			plants[j] = client.NewPlant{ID: p.ID, Name: p.Name, Tag: p.Tag}
		}
		err := c.retry(stop, func() error {
			_, err := cl.CreatePlants(ctx, plants)
			return err
		})
		var apiErr *client.Error
		switch {
		case err == nil:
			for _, i := range pending {
				results[i] = importResult{line: items[i].Number, outcome: outcomeCreated}
			}
			return
		case errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed):
			if c.Atomic {
				err = fmt.Errorf("the server has no POST /plants/batch (an older plantstore?), which --atomic needs: %w", err)
				for _, i := range pending {
					results[i] = c.failed(importResult{line: items[i].Number}, err)
				}
				return
			}
			c.single.Store(true)
			continue
		case errors.As(err, &apiErr) && apiErr.Index != nil && *apiErr.Index >= 0 && *apiErr.Index < len(pending) &&
			(apiErr.Status == http.StatusConflict || apiErr.Status == http.StatusBadRequest):
			j := *apiErr.Index
			// The item's own message, as a single create would have it.
			detail := strings.TrimPrefix(apiErr.Message, fmt.Sprintf("plants[%d]: ", j))
			res := importResult{line: items[pending[j]].Number, outcome: outcomeInvalid, detail: detail}
			if apiErr.Status == http.StatusConflict {
				res.outcome = outcomeConflicted
			}
			results[pending[j]] = res
			if c.Atomic {
				return // the others stay not sent: nothing of the file was stored
			}
			pending = append(pending[:j:j], pending[j+1:]...)
		default:
			for _, i := range pending {
				results[i] = c.failed(importResult{line: items[i].Number}, err)
			}
			return
		}
	}
}

// resumed GETs the plant of it (--resume): stored is true when that
// settles it (stored identically: replayed; otherwise: conflicted; a
// failure), false when it is not stored yet and is to be created.
func (c *plantsImportCmd) resumed(ctx, stop context.Context, cl *client.Client, it plantlines.Line) (res importResult, stored bool) {
	res = importResult{line: it.Number}
	p := it.Plant
	var got *client.Plant
	err := c.retry(stop, func() (err error) {
		got, err = cl.GetPlant(ctx, p.ID, client.GetPlantOptions{})
		return err
	})
	var apiErr *client.Error
	switch {
	case err == nil:
		if (&plantstore.Plant{ID: got.ID, Name: got.Name, Tag: got.Tag}).SameContent(p) {
			res.outcome = outcomeReplayed
		} else {
			res.outcome = outcomeConflicted
			res.detail = fmt.Sprintf("plant %d is stored with a different name or tag", p.ID)
		}
		return res, true
	case errors.As(err, &apiErr) && apiErr.Code == plantstore.CodeNotFound:
		return res, false // not stored yet: create it
	}
	return c.failed(res, err), true
}

// importOne creates one plant (POST /plants). Its requests run on ctx; once
// stop ends, an attempt that failed is not retried.
func (c *plantsImportCmd) importOne(ctx, stop context.Context, cl *client.Client, it plantlines.Line) importResult {
	res := importResult{line: it.Number}
	p := it.Plant
	err := c.retry(stop, func() error {
		_, err := cl.CreatePlant(ctx, client.NewPlant{ID: p.ID, Name: p.Name, Tag: p.Tag})
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
		return c.failed(res, err)
	}
	return res
}

// failed records err; a refused token, or a server never reached, is
// fatal.
func (c *plantsImportCmd) failed(res importResult, err error) importResult {
	res.outcome, res.detail = outcomeFailed, err.Error()
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && (apiErr.Status == http.StatusUnauthorized || apiErr.Status == http.StatusForbidden):
		res.fatal = apiErr
	case !c.reached.Load() && unreachable(err):
		res.fatal = fmt.Errorf("cannot reach the server at %s (--server, PLANTSTORE_SERVER): %w", serverURL(c.Server), err)
	}
	return res
}

// unreachable reports whether err is a failure to connect (refused, no
// route, a name that does not resolve, a dial timeout), not one of a
// request on a connection made.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}

// retry calls fn until it succeeds, fails for good, or five attempts have
// failed: 429 waits Retry-After (at least 100 ms), 5xx and network errors
// back off from 200 ms. Once stop ends it retries nothing; before the server
// has answered anything, a failure to connect is not retried (failed makes
// it fatal).
func (c *plantsImportCmd) retry(stop context.Context, fn func() error) error {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		var answered *client.Error
		if err == nil || errors.As(err, &answered) {
			c.reached.Store(true)
		}
		if err == nil || attempt == 5 || stop.Err() != nil || !c.reached.Load() && unreachable(err) {
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
		case <-stop.Done():
			return err
		}
	}
}
