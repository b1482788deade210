package clientcli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore/client"
)

// Webhooks is `plantstore webhooks`: a client of a running server that
// manages the token owner's subscriptions (the token needs the
// webhooks:manage scope).
type Webhooks struct {
	Create       webhooksCreateCmd       `cmd:"" help:"Subscribe a URL to new plants (or, with --types, to plant events); prints the signing secret (shown only here and by rotate-secret)."`
	List         webhooksListCmd         `cmd:"" help:"List subscriptions, one page or --all of them."`
	Get          webhooksGetCmd          `cmd:"" help:"Print a subscription and its state."`
	Delete       webhooksDeleteCmd       `cmd:"" help:"Delete a subscription (pending retries included)."`
	RotateSecret webhooksRotateSecretCmd `cmd:"" name:"rotate-secret" help:"Give a subscription a new signing secret and print it (the old one stays valid 24 hours)."`
	Deliveries   webhooksDeliveriesCmd   `cmd:"" help:"Print a subscription's delivery attempts, the latest first: one page or --all, optionally of one --state."`
	Update       webhooksUpdateCmd       `cmd:"" help:"Change a subscription: --url, --description, --types, --enable or --disable."`
	Resend       webhooksResendCmd       `cmd:"" help:"Queue a new attempt of one delivery now (its msg_ id, from deliveries)."`
	Recover      webhooksRecoverCmd      `cmd:"" help:"Re-queue every delivery that failed since a time (idempotent per --since)."`
	Ping         webhooksPingCmd         `cmd:"" help:"Send a signed test ping to the receiver now and print what came of it."`
}

type webhooksCreateCmd struct {
	clientFlags
	formatFlag
	URL         string   `arg:"" name:"url" help:"Absolute http:// or https:// URL of the receiver."`
	Description string   `help:"Description (at most 256 characters)."`
	Types       []string `help:"Event types to receive as envelopes (none: new plants only)."`
}

// Run creates the subscription and prints it with its secret.
func (c *webhooksCreateCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	w, err := cl.CreateWebhook(ctx, client.NewWebhook{URL: c.URL, Description: c.Description, Types: c.Types})
	if err != nil {
		return err
	}
	return c.printWebhooks(e.Stdout, []client.Webhook{*w}, true)
}

type webhooksListCmd struct {
	clientFlags
	formatFlag
	All   bool   `help:"Follow the Link header through every page and print all subscriptions."`
	Limit int    `help:"Page size (1..1000); default: the server's (100)."`
	After string `help:"Only subscriptions whose id sorts after this one (the cursor of the next page)."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// subscriptions.
func (c *webhooksListCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListWebhooksOptions{Limit: c.Limit, After: c.After}
	if !c.All {
		page, err := cl.ListWebhooks(ctx, opts)
		if err != nil {
			return err
		}
		if err := c.printWebhooks(e.Stdout, page.Webhooks, false); err != nil {
			return err
		}
		if page.Next != nil && page.Next.After != "" {
			fmt.Fprintf(e.Stderr, "more subscriptions follow: --after %s (or --all)\n", TextColumn(page.Next.After))
		}
		return nil
	}
	var hooks []client.Webhook
	for w, err := range cl.Webhooks(ctx, opts) {
		if err != nil {
			return err
		}
		hooks = append(hooks, w)
	}
	return c.printWebhooks(e.Stdout, hooks, false)
}

type webhooksGetCmd struct {
	clientFlags
	formatFlag
	ID string `arg:"" help:"Id of the subscription (whk_...)."`
}

// Run prints the subscription.
func (c *webhooksGetCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	w, err := cl.GetWebhook(ctx, c.ID)
	if err != nil {
		return err
	}
	return c.printWebhooks(e.Stdout, []client.Webhook{*w}, true)
}

type webhooksDeleteCmd struct {
	clientFlags
	ID string `arg:"" help:"Id of the subscription (whk_...)."`
}

// Run deletes the subscription; it prints nothing.
func (c *webhooksDeleteCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.DeleteWebhook(ctx, c.ID)
}

type webhooksRotateSecretCmd struct {
	clientFlags
	formatFlag
	ID                 string         `arg:"" help:"Id of the subscription (whk_...)."`
	OldSecretExpiresIn *time.Duration `name:"old-secret-expires-in" help:"How long the previous secret keeps signing (default: 24h)."`
}

// Run rotates the secret and prints the subscription with the new one.
func (c *webhooksRotateSecretCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	w, err := cl.RotateWebhookSecret(ctx, c.ID, client.RotateSecretOptions{OldSecretExpiresIn: c.OldSecretExpiresIn})
	if err != nil {
		return err
	}
	return c.printWebhooks(e.Stdout, []client.Webhook{*w}, true)
}

type webhooksDeliveriesCmd struct {
	clientFlags
	formatFlag
	ID    string `arg:"" help:"Id of the subscription (whk_...)."`
	State string `enum:",pending,succeeded,failed" default:"" help:"Only the attempts after which the delivery was pending, succeeded or failed."`
	All   bool   `help:"Follow the Link header through every page and print all attempts."`
	Limit int    `help:"Page size (1..1000); default: the server's (100)."`
	After string `help:"The cursor of the next page (printed on stderr when more follow)."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// delivery attempts.
func (c *webhooksDeliveriesCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListDeliveriesOptions{Limit: c.Limit, After: c.After, State: c.State}
	var ds []client.Delivery
	if c.All {
		for d, err := range cl.WebhookDeliveries(ctx, c.ID, opts) {
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
	} else {
		page, err := cl.ListWebhookDeliveries(ctx, c.ID, opts)
		if err != nil {
			return err
		}
		ds = page.Deliveries
		if page.Next != nil && page.Next.After != "" {
			defer fmt.Fprintf(e.Stderr, "more attempts follow: --after %s (or --all)\n", TextColumn(page.Next.After))
		}
	}
	if c.Format != "table" {
		if ds == nil {
			ds = []client.Delivery{}
		}
		return WriteJSON(e.Stdout, ds)
	}
	return writeDeliveries(e.Stdout, ds)
}

// writeDeliveries writes delivery attempts as a table, their strings
// through textColumn.
func writeDeliveries(w io.Writer, ds []client.Delivery) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPTED\tMESSAGE\tPLANT\tATTEMPT\tSTATE\tSTATUS\tDURATION\tNEXT\tERROR")
	for _, d := range ds {
		plant, status, next := "", "", ""
		if d.PlantID != nil {
			plant = strconv.FormatInt(*d.PlantID, 10)
		}
		if d.StatusCode != 0 {
			status = strconv.Itoa(d.StatusCode)
		}
		if d.NextAttemptAt != nil {
			next = d.NextAttemptAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%.1fms\t%s\t%s\n", d.AttemptedAt.Format(time.RFC3339), TextColumn(d.MessageID),
			plant, d.Attempt, TextColumn(d.State), status, d.DurationMS, next, TextColumn(d.Error))
	}
	return tw.Flush()
}

// printWebhooks writes subscriptions as a JSON value (one must be an object,
// else an array) or as a table (its strings through textColumn); the
// SECRET column only when one has a secret (create, rotate-secret).
func (f formatFlag) printWebhooks(w io.Writer, hooks []client.Webhook, one bool) error {
	if f.Format != "table" {
		var v any = hooks
		if one {
			v = hooks[0]
		} else if hooks == nil {
			v = []client.Webhook{}
		}
		return WriteJSON(w, v)
	}
	secret := false
	for _, h := range hooks {
		secret = secret || h.Secret != ""
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "ID\tURL\tENABLED\tCREATED\tDESCRIPTION")
	if secret {
		fmt.Fprint(tw, "\tSECRET")
	}
	fmt.Fprintln(tw)
	for _, h := range hooks {
		enabled := "yes"
		if !h.Enabled {
			enabled = "no (" + TextColumn(h.DisabledReason) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", TextColumn(h.ID), TextColumn(h.URL), enabled, h.CreatedAt.Format(time.RFC3339), TextColumn(h.Description))
		if secret {
			fmt.Fprintf(tw, "\t%s", TextColumn(h.Secret))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
