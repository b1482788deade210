// Command plantstore is the Plant Store service and its administration tool:
//
//	plantstore serve                  run the HTTP API
//	plantstore migrate                apply schema migrations
//	plantstore token create|list|revoke
//	plantstore healthcheck            probe /healthz (container HEALTHCHECK)
//	plantstore plants create|get|list|delete|import   (a client of a server)
//
// Every flag can also be set from the environment (PLANTSTORE_ADDR,
// PLANTSTORE_DB, ...); `plantstore COMMAND --help` lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/plantstore/plantstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		var exit exitCode
		if errors.As(err, &exit) {
			os.Exit(int(exit))
		}
		fmt.Fprintln(os.Stderr, "plantstore:", describe(err))
		os.Exit(1)
	}
}

// describe renders an error for the terminal: a domain error as its message
// and cause, without the code.
func describe(err error) string {
	var e *plantstore.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	if e.Err != nil {
		return e.Message + " (" + e.Err.Error() + ")"
	}
	return e.Message
}

// exitCode ends the program with a status and no further message (help
// output, usage errors already printed by the parser).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// cli is the command line. Flags read their environment variable when not
// given (kong's env tags document them; envResolver reads them through the
// injected getenv so tests need not touch the process environment).
type cli struct {
	Serve   serveCmd   `cmd:"" help:"Run the HTTP API."`
	Migrate migrateCmd `cmd:"" help:"Apply pending schema migrations and exit."`
	Token   tokenCmd   `cmd:"" help:"Create, list and revoke bearer tokens."`
	Plants  plantsCmd  `cmd:"" help:"Client of a running server: create, get, list, delete and import plants."`

	Healthcheck healthcheckCmd `cmd:"" help:"Probe a running server's /healthz: exit 0 on a 200, else 1 (for container HEALTHCHECKs)."`
}

// env carries the process's environment and output streams to commands.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// run parses args and runs the chosen command until it ends or ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c cli
	exit := -1
	parser, err := kong.New(&c,
		kong.Name("plantstore"),
		kong.Description("Plant Store: a plant store HTTP API on SQLite, with bearer tokens."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exit = code }),
		kong.Resolvers(envResolver(getenv)),
		kong.UsageOnError(),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(&env{getenv: getenv, stdout: stdout, stderr: stderr}),
	)
	if err != nil {
		return err
	}
	kctx, err := parser.Parse(args)
	if exit >= 0 {
		return exitCode(exit) // --help, or a usage error kong already printed
	}
	if err != nil {
		parser.Errorf("%s%s", err, envSource(parser.Model, err, getenv))
		return exitCode(2)
	}
	return kctx.Run()
}

// envResolver resolves a flag from the first of its env tag's variables
// that getenv returns non-empty.
func envResolver(getenv func(string) string) kong.Resolver {
	return kong.ResolverFunc(func(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
		for _, name := range flag.Envs {
			if v := getenv(name); v != "" {
				return v, nil
			}
		}
		return nil, nil
	})
}
