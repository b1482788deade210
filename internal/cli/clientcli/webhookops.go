package clientcli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

type webhooksUpdateCmd struct {
	clientFlags
	formatFlag
	ID          string   `arg:"" help:"Id of the subscription (whk_...)."`
	URL         *string  `name:"url" help:"New receiver URL (absolute http:// or https://)."`
	Description *string  `help:"New description (\"\" clears it)."`
	Types       []string `help:"Event types it receives from now on; see --untyped."`
	Untyped     bool     `help:"Make it untyped: bare new plants, creates only."`
	Enable      bool     `help:"Re-enable a disabled subscription."`
	Disable     bool     `help:"Disable it: no deliveries until re-enabled."`
}

// Run changes the subscription and prints it as changed.
func (c *webhooksUpdateCmd) Run(ctx context.Context, e *Env) error {
	if c.Enable && c.Disable {
		return cliexit.Usagef("--enable and --disable exclude each other")
	}
	if c.Untyped && c.Types != nil {
		return cliexit.Usagef("--types and --untyped exclude each other")
	}
	patch := client.WebhookPatch{URL: c.URL, Description: c.Description, Types: c.Types, Untyped: c.Untyped}
	if c.Enable || c.Disable {
		patch.Enabled = &c.Enable
	}
	if patch.URL == nil && patch.Description == nil && patch.Types == nil && !patch.Untyped && patch.Enabled == nil {
		return cliexit.Usagef("nothing to change: give --url, --description, --types, --untyped, --enable or --disable")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	w, err := cl.UpdateWebhook(ctx, c.ID, patch)
	if err != nil {
		return err
	}
	if w.MissedSince != nil {
		fmt.Fprintf(e.Stderr, "re-enabled: re-queue what failed meanwhile with: plantstore webhooks recover %s --since %s\n",
			TextColumn(w.ID), w.MissedSince.Format(time.RFC3339Nano))
	}
	return c.printWebhooks(e.Stdout, []client.Webhook{*w}, true)
}

type webhooksResendCmd struct {
	clientFlags
	formatFlag
	ID         string `arg:"" help:"Id of the subscription (whk_...)."`
	DeliveryID string `arg:"" name:"delivery-id" help:"Id of the delivery (msg_..., the MESSAGE of webhooks deliveries)."`
}

// Run queues the delivery and prints it.
func (c *webhooksResendCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	d, err := cl.ResendDelivery(ctx, c.ID, c.DeliveryID)
	if err != nil {
		return err
	}
	if c.Format != "table" {
		return WriteJSON(e.Stdout, d)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tSTATE\tATTEMPTS\tCREATED\tNEXT")
	next := ""
	if d.NextAttemptAt != nil {
		next = d.NextAttemptAt.Format(time.RFC3339)
	}
	fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", TextColumn(d.MessageID), TextColumn(d.State), d.Attempts, d.CreatedAt.Format(time.RFC3339), next)
	return tw.Flush()
}

type webhooksRecoverCmd struct {
	clientFlags
	formatFlag
	ID    string `arg:"" help:"Id of the subscription (whk_...)."`
	Since string `required:"" help:"Re-queue what failed since: an RFC 3339 time or a duration ago."`
}

// Run re-queues the failed deliveries and prints how many.
func (c *webhooksRecoverCmd) Run(ctx context.Context, e *Env) error {
	since, err := parseSince(c.Since, time.Now())
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	// As a time (a duration resolved here), which servers older than the
	// duration form of the API take too.
	r, err := cl.RecoverWebhook(ctx, c.ID, since)
	if err != nil {
		return err
	}
	if c.Format != "table" {
		return WriteJSON(e.Stdout, r)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SINCE\tREQUEUED")
	fmt.Fprintf(tw, "%s\t%d\n", r.Since.Format(time.RFC3339Nano), r.Requeued)
	return tw.Flush()
}

// parseSince reads --since as the server does (plantstore.ParseSince and
// CheckSince, at this machine's now), so that a bad one is a usage error.
func parseSince(s string, now time.Time) (time.Time, error) {
	since, err := plantstore.ParseSince(s, now)
	if err == nil {
		err = plantstore.CheckSince(since, now)
	}
	if err != nil {
		return time.Time{}, cliexit.Usagef("--since %q: %v", s, err)
	}
	return since, nil
}

type webhooksPingCmd struct {
	clientFlags
	formatFlag
	ID string `arg:"" help:"Id of the subscription (whk_...)."`
}

// Run pings the receiver and prints the outcome; it exits 1 when the
// receiver did not answer 2xx.
func (c *webhooksPingCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.PingWebhook(ctx, c.ID)
	if err != nil {
		return err
	}
	if c.Format != "table" {
		if err := WriteJSON(e.Stdout, p); err != nil {
			return err
		}
	} else if err := writePing(e.Stdout, p); err != nil {
		return err
	}
	if !p.Succeeded {
		return cliexit.Code(1)
	}
	return nil
}

// writePing writes a ping's outcome as a table, its strings through
// textColumn.
func writePing(w io.Writer, p *client.PingResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tSUCCEEDED\tSTATUS\tDURATION\tERROR")
	status := ""
	if p.StatusCode != 0 {
		status = fmt.Sprint(p.StatusCode)
	}
	fmt.Fprintf(tw, "%s\t%t\t%s\t%.1fms\t%s\n", TextColumn(p.MessageID), p.Succeeded, status, p.DurationMS, TextColumn(p.Error))
	return tw.Flush()
}
