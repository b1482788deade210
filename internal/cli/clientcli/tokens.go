package clientcli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/cliflags"
)

// Tokens is `plantstore tokens`: a client of a running server that
// manages the calling token's owner's tokens over the API (the token needs
// the tokens:manage scope). `plantstore token ...` works on the database
// itself instead.
type Tokens struct {
	List   tokensListCmd   `cmd:"" help:"List the owner's tokens, oldest first: one page or --all of them (never a secret)."`
	Create tokensCreateCmd `cmd:"" help:"Create a token of the owner, within the calling token's scopes and expiry, and print it with its secret (shown only here)."`
	Show   tokensShowCmd   `cmd:"" help:"Print one of the owner's tokens (never its secret)."`
	Revoke tokensRevokeCmd `cmd:"" help:"Revoke one of the owner's tokens and print it, revoked."`
}

type tokensListCmd struct {
	clientFlags
	formatFlag
	All   bool   `help:"Follow the Link header through every page and print all tokens."`
	Limit int    `help:"Page size (1..1000); default: the server's (100)."`
	After string `help:"Only tokens listed after this one, a token id (the cursor of the next page)."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// tokens.
func (c *tokensListCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListTokensOptions{Limit: c.Limit, After: c.After}
	if !c.All {
		page, err := cl.ListTokens(ctx, opts)
		if err != nil {
			return err
		}
		if err := c.printTokens(e.Stdout, page.Tokens, false); err != nil {
			return err
		}
		if page.Next != nil && page.Next.After != "" {
			fmt.Fprintf(e.Stderr, "more tokens follow: --after %s (or --all)\n", TextColumn(page.Next.After))
		}
		return nil
	}
	var tokens []client.Token
	for t, err := range cl.Tokens(ctx, opts) {
		if err != nil {
			return err
		}
		tokens = append(tokens, t)
	}
	return c.printTokens(e.Stdout, tokens, false)
}

type tokensCreateCmd struct {
	clientFlags
	formatFlag
	Scope []string     `name:"scope" required:"" sep:"none" placeholder:"SCOPE" help:"A scope of the new token (repeatable, or comma-separated)."`
	TTL   cliflags.TTL `name:"ttl" placeholder:"DURATION" help:"Lifetime, ${ttl_grammar}; 0 or absent: no expiry (only from a token that has none)."`
}

// Run creates the token and prints it with its secret, the only time the
// secret is shown.
func (c *tokensCreateCmd) Run(ctx context.Context, e *Env) error {
	var scopes []string
	for _, s := range c.Scope {
		scopes = append(scopes, strings.Fields(strings.ReplaceAll(s, ",", " "))...)
	}
	if len(scopes) == 0 {
		return cliexit.Usagef("--scope: name at least one scope")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	t, err := cl.CreateToken(ctx, client.NewToken{Scopes: scopes, TTL: time.Duration(c.TTL)})
	if err != nil {
		return err
	}
	return c.printTokens(e.Stdout, []client.Token{*t}, true)
}

type tokensShowCmd struct {
	clientFlags
	formatFlag
	ID string `arg:"" help:"Id of the token (tok_...), as tokens list shows it."`
}

// Run prints the token.
func (c *tokensShowCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	t, err := cl.GetToken(ctx, c.ID)
	if err != nil {
		return err
	}
	return c.printTokens(e.Stdout, []client.Token{*t}, true)
}

type tokensRevokeCmd struct {
	clientFlags
	formatFlag
	ID string `arg:"" help:"Id of the token (tok_...), as tokens list shows it."`
}

// Run revokes the token (requests with it are refused from then on: at
// once by the server that answered, by other replicas within their token
// cache TTL) and prints it.
func (c *tokensRevokeCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	t, err := cl.RevokeToken(ctx, c.ID)
	if err != nil {
		return err
	}
	return c.printTokens(e.Stdout, []client.Token{*t}, true)
}

// printTokens writes tokens as a JSON value (one must be an object, else an
// array) or as a table; the SECRET column only when one has a secret
// (create). Every string the server sent goes through textColumn, so a
// control character cannot forge or hide rows.
func (f formatFlag) printTokens(w io.Writer, tokens []client.Token, one bool) error {
	if f.Format != "table" {
		var v any = tokens
		if one {
			v = tokens[0]
		} else if tokens == nil {
			v = []client.Token{}
		}
		return WriteJSON(w, v)
	}
	secret := false
	for _, t := range tokens {
		secret = secret || t.Secret != ""
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "ID\tSCOPES\tCREATED\tEXPIRES\tSTATUS\tLAST4")
	if secret {
		fmt.Fprint(tw, "\tSECRET")
	}
	fmt.Fprintln(tw)
	for _, t := range tokens {
		expires, last4 := "never", "-"
		if t.ExpiresAt != nil {
			expires = t.ExpiresAt.Format(time.RFC3339)
		}
		if t.Last4 != nil {
			last4 = TextColumn(*t.Last4)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", TextColumn(t.ID), TextColumn(strings.Join(t.Scopes, ",")),
			t.CreatedAt.Format(time.RFC3339), expires, TextColumn(t.Status), last4)
		if secret {
			fmt.Fprintf(tw, "\t%s", TextColumn(t.Secret))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
