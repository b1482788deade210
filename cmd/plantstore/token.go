package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/clientcli"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/cliflags"
	"github.com/plantstore/plantstore/internal/service"
)

// tokenCmd is `plantstore token`.
type tokenCmd struct {
	Create tokenCreateCmd `cmd:"" help:"Create a token: its secret alone on stdout, and what it is (created tok_… for owner … (scopes …, expires …)) on stderr."`
	List   tokenListCmd   `cmd:"" help:"List tokens (never their secrets)."`
	Revoke tokenRevokeCmd `cmd:"" help:"Revoke a token by its ID."`
}

type tokenCreateCmd struct {
	dbFlags
	Owner string       `required:"" help:"Owner of the plants the token reaches."`
	Scope []string     `name:"scope" sep:"none" placeholder:"SCOPE" help:"A scope to grant (repeatable, or comma-separated): ${scopes}. Default: ${default_scopes}."`
	TTL   cliflags.TTL `name:"ttl" placeholder:"DURATION" help:"Lifetime, ${ttl_grammar}; at most 100 years (36525d); 0 or absent: no expiry."`
	// Create is --create: without it a SQLite --db that does not exist is
	// an error naming it (a command run in the wrong directory must not
	// print a token of a new, empty database that no server reads).
	Create bool `name:"create" help:"SQLite: create the --db database if it does not exist."`
}

// Run creates the token and prints its secret, the only time it is shown.
func (c *tokenCreateCmd) Run(ctx context.Context, e *env) error {
	// The service checks the owner too; checked here first, before the
	// database is opened, the error is about the owner whatever the
	// database's state.
	if err := plantstore.ValidateOwner(strings.TrimSpace(c.Owner)); err != nil {
		return cliexit.Usagef("--owner: %s", cliexit.Describe(err))
	}
	if c.Create {
		c.create = createAlways
	}
	warnDB(e, &c.dbFlags)
	db, err := c.open(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if c.created {
		fmt.Fprintf(e.stderr, "plantstore: created a new database %s\n", c.DB)
	}
	var scopes []string
	for _, s := range c.Scope {
		scopes = append(scopes, strings.Fields(strings.ReplaceAll(s, ",", " "))...)
	}
	tok, secret, err := tokenService(db).CreateToken(ctx, plantstore.TokenRequest{Owner: c.Owner, Scopes: scopes, TTL: time.Duration(c.TTL)})
	if err != nil && plantstore.ErrorCode(err) == plantstore.CodeInvalidBody {
		return &cliexit.UsageError{Err: cliError(err)} // a scope or TTL the flags gave
	}
	if err != nil {
		return cliError(err)
	}
	if _, err := fmt.Fprintln(e.stdout, secret); err != nil {
		return err
	}
	// What was made, never the secret: the id is what token revoke takes.
	_, err = fmt.Fprintln(e.stderr, tokenCreated(tok))
	return err
}

// tokenCreated is the line token create writes on stderr:
// "created tok_… for owner alice (scopes plants:read plants:write, expires
// never)", the expiry in RFC 3339 (UTC) when the token has one.
func tokenCreated(t *plantstore.Token) string {
	expires := "never"
	if t.ExpiresAt != nil {
		expires = t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("created %s for owner %s (scopes %s, expires %s)", t.ID, clientcli.TextColumn(t.Owner), strings.Join(t.Scopes, " "), expires)
}

type tokenListCmd struct {
	dbFlags
	Format string `default:"table" enum:"table,json" help:"Output format: table or json."`
}

// tokenJSON is one token in `token list --format json`.
type tokenJSON struct {
	ID        string     `json:"id"`
	Owner     string     `json:"owner"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	Status    string     `json:"status"`
}

// Run prints every token's metadata.
func (c *tokenListCmd) Run(ctx context.Context, e *env) error {
	warnDB(e, &c.dbFlags)
	db, err := c.open(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	tokens, err := tokenService(db).FindTokens(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if c.Format == "json" {
		out := make([]tokenJSON, 0, len(tokens))
		for _, t := range tokens {
			out = append(out, tokenJSON{t.ID, t.Owner, t.Scopes, t.CreatedAt, t.ExpiresAt, t.RevokedAt, t.Status(now)})
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOWNER\tSCOPES\tCREATED\tEXPIRES\tSTATUS")
	for _, t := range tokens {
		expires := "never"
		if t.ExpiresAt != nil {
			expires = t.ExpiresAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", clientcli.TextColumn(t.ID), clientcli.TextColumn(t.Owner), clientcli.TextColumn(strings.Join(t.Scopes, ",")),
			t.CreatedAt.Format(time.RFC3339), expires, t.Status(now))
	}
	return tw.Flush()
}

type tokenRevokeCmd struct {
	dbFlags
	ID string `arg:"" help:"The token's ID (tok_...), as token list shows it."`
}

// Run revokes the token; requests with it are refused from then on.
func (c *tokenRevokeCmd) Run(ctx context.Context, e *env) error {
	warnDB(e, &c.dbFlags)
	db, err := c.open(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := tokenService(db).RevokeToken(ctx, c.ID); err != nil {
		return cliError(err)
	}
	fmt.Fprintf(e.stderr, "plantstore: revoked %s\n", c.ID)
	return nil
}

// tokenService is the token service over db, for one command.
func tokenService(db plantstore.Backend) plantstore.TokenService {
	return service.New(db, service.Config{}).Tokens
}

// cliError shows a domain error's message without its code. One with a
// cause (storage unavailable) is returned as it is, for main to show the
// message with the cause.
func cliError(err error) error {
	var e *plantstore.Error
	if errors.As(err, &e) && e.Err == nil {
		return fmt.Errorf("%s", e.Message)
	}
	return err
}
