// Command plantstore is the Plant Store service and its administration tool:
//
//	plantstore serve                  run the HTTP API
//	plantstore migrate                apply schema migrations
//	plantstore token create|list|revoke   (on the database file: --db, default data/plantstore.db)
//	plantstore backup|restore         SQLite snapshot archive, while serving / into a stopped or new file
//	plantstore copy                   every table from one database to another (SQLite <-> PostgreSQL), verified, resumable
//	plantstore export|import          plants as JSON lines, with their owner, from/to any database
//	plantstore healthcheck            probe /healthz (container HEALTHCHECK)
//	plantstore plants create|get|list|update|delete|import   (a client of a server)
//	plantstore webhooks create|list|get|update|delete|rotate-secret|deliveries|resend|recover|ping   (idem)
//	plantstore events list|tail       (idem; tail follows the event stream)
//	plantstore tokens list|create|show|revoke   (idem: the owner's tokens over the API; `token` works on the database)
//	plantstore version                (also --version)
//
// Every flag can also be set from the environment (PLANTSTORE_ADDR,
// PLANTSTORE_DB, ...); `plantstore COMMAND --help` lists them. A bare
// `plantstore` prints the help (exit 0); a usage error (unknown command or
// flag, a missing or bad value) exits 2, any other failure 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/internal/cli/clientcli"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/cliflags"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		var code cliexit.Code
		if !errors.As(err, &code) {
			fmt.Fprintln(os.Stderr, "plantstore:", cliexit.Describe(err))
		}
		os.Exit(cliexit.Status(err))
	}
}

// cli is the command line. Flags read their environment variable when not
// given (kong's env tags document them; cliflags.Resolver reads them
// through the injected getenv so tests need not touch the process
// environment).
type cli struct {
	Serve   serveCmd         `cmd:"" help:"Run the HTTP API."`
	Migrate migrateCmd       `cmd:"" help:"Apply pending schema migrations and exit."`
	Token   tokenCmd         `cmd:"" help:"On the database (--db, default data/plantstore.db; no server needed): create, list and revoke bearer tokens of any owner."`
	Backup  backupCmd        `cmd:"" help:"Write a verified snapshot of a SQLite database, while it serves, as a tar archive with a manifest (--to FILE, or - for stdout)."`
	Restore restoreCmd       `cmd:"" help:"Restore a SQLite database from a backup archive, verified against its manifest; never over a database in use."`
	Plants  clientcli.Plants `cmd:"" help:"Client of a running server: create, get, list, update, delete and import plants."`

	Webhooks clientcli.Webhooks `cmd:"" help:"Client of a running server: create, list, get, update and delete webhook subscriptions, rotate their secret, see, resend and recover their deliveries, ping them."`
	Events   clientcli.Events   `cmd:"" help:"Client of a running server: list the owner's events, or tail them as they happen."`
	Tokens   clientcli.Tokens   `cmd:"" help:"Client of a running server (--server, --token): list, create, show and revoke the calling token's owner's tokens over the API (the token needs tokens:manage)."`

	Copy   copyCmd   `cmd:"" help:"Copy every table (plants, tokens, subscriptions and their secrets, deliveries, events) from one database to another, SQLite or PostgreSQL, while the source serves; verified, resumable."`
	Export exportCmd `cmd:"" help:"Write a database's plants, every owner's, as JSON lines (one {owner,id,name,tag} per line)."`
	Import importCmd `cmd:"" help:"Load plants from JSON lines (plantstore export's format) into a database, keeping each line's owner; existing ids are skipped."`

	Healthcheck clientcli.Healthcheck `cmd:"" help:"Probe a running server's /healthz: exit 0 on a 200, else 1 (for container HEALTHCHECKs)."`
	Version     versionCmd            `cmd:"" help:"Print the version (module, VCS revision and time, Go) and exit."`

	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`
}

// description opens `plantstore --help`: what the program is, and which
// commands work on the database and which on a running server (token and
// tokens read alike).
const description = `Plant Store: a plant store HTTP API on SQLite or PostgreSQL, with bearer tokens.

On the database itself (--db or PLANTSTORE_DB: a SQLite file, by default data/plantstore.db in the working directory, or a postgres:// URL; no server needed): serve, migrate, token, backup, restore, copy, export, import.

Clients of a running server (--server URL, default http://127.0.0.1:8080, and --token or PLANTSTORE_TOKEN): plants, webhooks, events, tokens, healthcheck.

So "token create" makes a token of any owner in the database file, and "tokens create" asks a running server for a token of the calling token's owner.`

// env carries the process's environment and output streams to commands.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	// set holds the flags the command line or the environment gave (by
	// name), for the warnings about flags that do not apply.
	set map[string]bool
}

// run parses args and runs the chosen command until it ends or ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c cli
	exit := -1
	if len(args) == 0 {
		args = []string{"--help"} // a bare plantstore: the overview, not an error
	}
	e := &env{getenv: getenv, stdout: stdout, stderr: stderr}
	parser, err := kong.New(&c,
		kong.Name("plantstore"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exit = code }),
		kong.Resolvers(cliflags.Resolver(getenv)),
		kong.UsageOnError(),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(e, &clientcli.Env{Stdout: stdout, Stderr: stderr}),
		cliVars(),
	)
	if err != nil {
		return err
	}
	kctx, err := parser.Parse(args)
	if exit >= 0 {
		return cliexit.Code(exit) // --help, or a usage error kong already printed
	}
	if err != nil {
		parser.Errorf("%s%s", cliflags.MissingEnv(parser.Model, err), cliflags.Source(parser.Model, err, getenv))
		return cliexit.Code(2)
	}
	e.set = cliflags.Set(kctx, args, getenv)
	return kctx.Run()
}

// cliVars are the variables the help texts use: ${scopes} lists every
// scope a token can carry, so that the help cannot omit one;
// ${ttl_grammar} is the grammar of the --ttl flags.
func cliVars() kong.Vars {
	return kong.Vars{
		"version":        buildinfo.String(version),
		"scopes":         strings.Join(plantstore.KnownScopes, ", "),
		"default_scopes": strings.Join(plantstore.DefaultScopes, ", "),
		"ttl_grammar":    cliflags.TTLGrammar,
	}
}
