package clientcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// Events is `plantstore events`: a client of a running server that
// reads the token owner's events (the token needs plants:read).
type Events struct {
	List eventsListCmd `cmd:"" help:"List events by seq, one page or --all of them."`
	Tail eventsTailCmd `cmd:"" help:"Follow the event stream: print each event as one line as it happens, resuming after a dropped connection; Ctrl-C ends it (exit 130)."`
}

type eventsListCmd struct {
	clientFlags
	formatFlag
	After int64  `help:"Only events whose seq is greater (the cursor of the next page)."`
	Limit int    `help:"Page size (1..1000); default: the server's (100)."`
	Type  string `enum:",plant.created,plant.updated,plant.deleted" default:"" help:"Only events of this type."`
	All   bool   `help:"Follow the Link header through every page and print all events."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// events.
func (c *eventsListCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListEventsOptions{After: c.After, Limit: c.Limit, Type: c.Type}
	var events []client.Event
	if c.All {
		for ev, err := range cl.Events(ctx, opts) {
			if err != nil {
				return err
			}
			events = append(events, ev)
		}
	} else {
		page, err := cl.ListEvents(ctx, opts)
		if err != nil {
			return err
		}
		events = page.Events
		if page.Next != nil {
			defer fmt.Fprintf(e.Stderr, "more events follow: --after %d (or --all)\n", page.Next.After)
		}
	}
	if c.Format != "table" {
		if events == nil {
			events = []client.Event{}
		}
		return WriteJSON(e.Stdout, events)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, eventsHeader)
	for _, ev := range events {
		writeEventRow(tw, ev)
	}
	return tw.Flush()
}

// eventsHeader is the header of the events table, of list and of tail.
const eventsHeader = "SEQ\tTYPE\tCREATED\tPLANT\tNAME\tTAG\tID"

// writeEventRow writes an event as a tab-separated row, its strings
// through textColumn.
func writeEventRow(w io.Writer, ev client.Event) {
	tag := ""
	if ev.Data.Tag != nil {
		tag = *ev.Data.Tag
	}
	fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", ev.Seq, TextColumn(ev.Type), ev.CreatedAt.Format(time.RFC3339Nano),
		ev.Data.ID, TextColumn(ev.Data.Name), TextColumn(tag), TextColumn(ev.ID))
}

type eventsTailCmd struct {
	clientFlags
	formatFlag
	After int64 `help:"Start after this seq (default 0: every event kept)."`
}

// Run prints the events of the stream, one per line (compact JSON, or
// tab-separated with --format table), until interrupted.
func (c *eventsTailCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e.Stdout)
	if c.Format == "table" {
		// The rows come one at a time, tab-separated: no tabwriter, which
		// would hold them back to align them.
		if _, err := fmt.Fprintln(e.Stdout, eventsHeader); err != nil {
			return err
		}
	}
	opts := client.TailOptions{OnReconnect: func(after int64, err error) {
		fmt.Fprintf(e.Stderr, "plantstore: event stream: %v; reconnecting after seq %s\n", cliexit.Describe(err), strconv.FormatInt(after, 10))
	}}
	for ev, err := range cl.TailEvents(ctx, c.After, opts) {
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return cliexit.Code(130) // Ctrl-C (or SIGTERM): the usual status of an interrupted command
			}
			return err
		}
		if c.Format == "table" {
			writeEventRow(e.Stdout, ev)
			continue
		}
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}
