package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/http"
	"github.com/plantstore/plantstore/sqlite"
)

// serveCmd is `plantstore serve`.
type serveCmd struct {
	dbFlags
	Durability      string        `env:"PLANTSTORE_DURABILITY" default:"full" enum:"full,relaxed" help:"full: a write is acknowledged only after it is fsynced (survives power loss). relaxed: survives a process crash, may lose the last writes on power loss."`
	Addr            string        `env:"PLANTSTORE_ADDR" default:":8080" help:"Address to listen on."`
	Migrate         bool          `env:"PLANTSTORE_MIGRATE" default:"true" negatable:"" help:"Apply pending schema migrations at start (--no-migrate: refuse to start on an old schema instead)."`
	BootstrapAdmin  bool          `env:"PLANTSTORE_BOOTSTRAP_ADMIN" default:"true" negatable:"" help:"When the database has no token at all, create one for owner admin and print it once on stderr."`
	BootstrapToken  string        `env:"PLANTSTORE_BOOTSTRAP_TOKEN" help:"Use this secret (32-256 visible ASCII characters) as the first admin token instead of generating one."`
	TokenCacheTTL   time.Duration `env:"PLANTSTORE_TOKEN_CACHE_TTL" default:"2s" help:"How long a verified token is trusted without a database lookup: a revoked token is refused within this time on every replica (0: immediately, one lookup per request)."`
	RateLimit       float64       `env:"PLANTSTORE_RATE_LIMIT" default:"1000" help:"Requests per second allowed to each token (0: no limit)."`
	RateBurst       int           `env:"PLANTSTORE_RATE_BURST" default:"2000" help:"Requests a token may send at once before the rate limit applies."`
	ShutdownTimeout time.Duration `env:"PLANTSTORE_SHUTDOWN_TIMEOUT" default:"15s" help:"How long in-flight requests may run after SIGTERM/SIGINT."`
	LogLevel        string        `env:"PLANTSTORE_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn, error."`
}

// Run serves until ctx is cancelled (SIGTERM/SIGINT), then shuts down
// gracefully: stop accepting, finish in-flight requests, close the database.
func (c *serveCmd) Run(ctx context.Context, e *env) error {
	logger := newLogger(e, c.LogLevel)
	if c.RateLimit < 0 || c.RateBurst < 0 {
		return errors.New("--rate-limit and --rate-burst must not be negative")
	}
	if c.TokenCacheTTL < 0 || c.TokenCacheTTL > time.Minute {
		return errors.New("--token-cache-ttl must be from 0 to 1m")
	}
	if c.ShutdownTimeout <= 0 {
		return errors.New("--shutdown-timeout must be positive")
	}
	c.durability = sqlite.Durability(c.Durability)
	db, err := c.open(ctx, c.Migrate)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := c.bootstrap(ctx, db, e); err != nil {
		return err
	}

	s := plantstorehttp.NewServer()
	s.Addr = c.Addr
	s.PlantService, s.TokenService, s.Storage = db, db, db
	s.Logger = logger
	s.RateLimit, s.RateBurst = rate.Limit(c.RateLimit), c.RateBurst
	s.TokenCacheTTL = c.TokenCacheTTL
	if err := s.Open(); err != nil {
		return err
	}
	logger.Info("plantstore serving", "addr", c.Addr, "url", s.URL(), "db", displayDB(c.DB), "durability", c.Durability)

	<-ctx.Done()
	logger.Info("plantstore shutting down", "grace", c.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := s.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// bootstrap creates the first token when there is none, so that
// `plantstore serve` alone gives a usable service.
func (c *serveCmd) bootstrap(ctx context.Context, db store, e *env) error {
	if !c.BootstrapAdmin && c.BootstrapToken == "" {
		return nil
	}
	var tok *plantstore.Token
	secret := c.BootstrapToken
	var err error
	if secret != "" {
		if tok, err = plantstore.NewTokenFromSecret(secret, "admin", nil, time.Now()); err != nil {
			return fmt.Errorf("--bootstrap-token: %w", cliError(err))
		}
	} else if tok, secret, err = plantstore.NewToken("admin", nil, 0, time.Now()); err != nil {
		return err
	}
	if created, err := db.CreateFirstToken(ctx, tok); err != nil || !created {
		return err
	}
	if c.BootstrapToken != "" {
		fmt.Fprintf(e.stderr, "plantstore: no tokens yet: registered the supplied bootstrap token for owner admin (%s, id %s).\n",
			strings.Join(tok.Scopes, " "), tok.ID)
		return nil
	}
	fmt.Fprintf(e.stderr, "plantstore: no tokens yet: created one for owner admin (%s, id %s). It is shown only now:\n\n    %s\n\n"+
		"plantstore: make more with: plantstore token create --owner NAME [--scope S ...] [--ttl DURATION] --db %s\n",
		strings.Join(tok.Scopes, " "), tok.ID, secret, displayDB(c.DB))
	return nil
}

// newLogger logs JSON lines to stderr, or text when stderr is a terminal.
func newLogger(e *env, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return slog.New(slog.NewTextHandler(e.stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(e.stderr, opts))
}
