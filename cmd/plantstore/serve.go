package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/term"
	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/console"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/oidc"
	plantstoreprometheus "github.com/plantstore/plantstore/internal/prometheus"
	"github.com/plantstore/plantstore/internal/sender"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/slogbuf"
	"github.com/plantstore/plantstore/internal/sqlite"
	"github.com/plantstore/plantstore/internal/tracing"
)

// serveCmd is `plantstore serve`.
type serveCmd struct {
	dbFlags
	createDBFlag
	Durability          string        `env:"PLANTSTORE_DURABILITY" default:"full" enum:"full,relaxed" help:"SQLite: full (fsynced before acknowledged) or relaxed."`
	WALAutocheckpoint   int           `name:"sqlite-wal-autocheckpoint" env:"PLANTSTORE_SQLITE_WAL_AUTOCHECKPOINT" default:"1000" placeholder:"PAGES" help:"SQLite: checkpoint the WAL once it holds this many pages (0: never)."`
	Addr                string        `env:"PLANTSTORE_ADDR" default:"127.0.0.1:8080" placeholder:"ADDR" help:"Address the API listens on; default ${default}, loopback only (:8080: every interface, as the container image sets)."`
	MetricsAddr         string        `name:"metrics-addr" env:"PLANTSTORE_METRICS_ADDR" default:"127.0.0.1:9464" placeholder:"ADDR" help:"Serve GET /metrics on this address of its own; default ${default}, loopback only (empty or off: none)."`
	PublicURL           string        `name:"public-url" env:"PLANTSTORE_PUBLIC_URL" placeholder:"URL" help:"The servers URL of /openapi.json (default: relative, /)."`
	Migrate             bool          `env:"PLANTSTORE_MIGRATE" default:"true" negatable:"" help:"Apply pending schema migrations at start."`
	BootstrapAdmin      bool          `env:"PLANTSTORE_BOOTSTRAP_ADMIN" default:"true" negatable:"" help:"With no token yet, create and print one for admin (${scopes})."`
	BootstrapToken      string        `env:"PLANTSTORE_BOOTSTRAP_TOKEN" help:"The first admin token's secret, instead of a generated one."`
	Seed                string        `name:"seed" env:"PLANTSTORE_SEED" type:"path" placeholder:"FILE" help:"With --db memory: only: create FILE's plants for admin at start."`
	TokenCacheTTL       time.Duration `env:"PLANTSTORE_TOKEN_CACHE_TTL" default:"2s" help:"How long a verified token is trusted without a lookup (0: off)."`
	MaxTokensPerOwner   int           `name:"max-tokens-per-owner" env:"PLANTSTORE_MAX_TOKENS_PER_OWNER" default:"1000" help:"Live tokens one owner may hold: POST /tokens refuses more (1..1000000)."`
	TokenRetention      time.Duration `env:"PLANTSTORE_TOKEN_RETENTION" default:"720h" help:"How long revoked and expired tokens are kept (0: forever)."`
	RateLimit           float64       `env:"PLANTSTORE_RATE_LIMIT" default:"1000" help:"Requests per second allowed to each owner, all its tokens together (0: no limit)."`
	RateBurst           int           `env:"PLANTSTORE_RATE_BURST" default:"2000" help:"Requests an owner may send at once before the rate limit applies."`
	BatchMax            int           `name:"batch-max" env:"PLANTSTORE_BATCH_MAX" default:"1000" help:"Plants one POST /plants/batch may create (1..10000); each counts as a request of the rate limit."`
	AuthFailureLimit    float64       `env:"PLANTSTORE_AUTH_FAILURE_LIMIT" default:"60" help:"Failed authentications per minute per client IP (0: no limit)."`
	ShutdownTimeout     time.Duration `env:"PLANTSTORE_SHUTDOWN_TIMEOUT" default:"15s" help:"How long in-flight requests may run after SIGTERM/SIGINT."`
	WebhookAllowPrivate bool          `env:"PLANTSTORE_WEBHOOK_ALLOW_PRIVATE" help:"Let webhooks reach loopback, private and link-local addresses."`
	WebhookConcurrency  int           `env:"PLANTSTORE_WEBHOOK_CONCURRENCY" default:"32" help:"Webhook deliveries in flight at once in this process."`
	WebhookInFlight     int           `name:"webhook-max-in-flight" env:"PLANTSTORE_WEBHOOK_MAX_IN_FLIGHT" default:"2" help:"Webhook deliveries in flight at once to one subscription."`
	WebhookMaxSubs      int           `name:"webhook-max-subscriptions" env:"PLANTSTORE_WEBHOOK_MAX_SUBSCRIPTIONS" default:"16" help:"Webhook subscriptions one owner may have (1..1000)."`
	WebhookTimeout      time.Duration `env:"PLANTSTORE_WEBHOOK_TIMEOUT" default:"15s" help:"Time limit of one webhook delivery attempt (at most 1h)."`
	WebhookFirstRetry   time.Duration `env:"PLANTSTORE_WEBHOOK_FIRST_RETRY" default:"5s" help:"Delay before a failed delivery's first retry (at most 1h)."`
	WebhookDisableAfter time.Duration `env:"PLANTSTORE_WEBHOOK_DISABLE_AFTER" default:"120h" help:"Disable a subscription failing for longer than this (0: never)."`
	WebhookRetention    time.Duration `env:"PLANTSTORE_WEBHOOK_RETENTION" default:"720h" help:"How long delivery history is kept (0: forever)."`
	EventRetention      time.Duration `env:"PLANTSTORE_EVENT_RETENTION" default:"720h" help:"How long events are kept (0: forever)."`
	StreamHeartbeat     time.Duration `name:"event-stream-heartbeat" env:"PLANTSTORE_EVENT_STREAM_HEARTBEAT" default:"15s" help:"Event stream: heartbeat and token check interval (1s to 10m)."`
	StreamPoll          time.Duration `name:"event-stream-poll" env:"PLANTSTORE_EVENT_STREAM_POLL" default:"1s" help:"Event stream: how often to read other replicas' events (100ms to 1m)."`
	StreamMax           int           `name:"event-stream-max" env:"PLANTSTORE_EVENT_STREAM_MAX" default:"1000" help:"Event streams open at once on this server (1 to 100000)."`
	StreamMaxAge        time.Duration `name:"event-stream-max-age" env:"PLANTSTORE_EVENT_STREAM_MAX_AGE" default:"1h" help:"Event stream: the longest a stream lasts (1s to 24h)."`
	DebugAddr           string        `env:"PLANTSTORE_DEBUG_ADDR" help:"Serve pprof on this separate address (never public; empty: off)."`
	LogLevel            string        `env:"PLANTSTORE_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn, error."`
	Console             bool          `env:"PLANTSTORE_CONSOLE" default:"true" negatable:"" help:"Serve the browser console at /console."`
	ConsoleDir          string        `name:"console-dir" env:"PLANTSTORE_CONSOLE_DIR" type:"path" placeholder:"DIR" help:"Development: serve the console from DIR, not the embedded copy."`
	CORSOrigins         []string      `name:"cors-origins" env:"PLANTSTORE_CORS_ORIGINS" placeholder:"ORIGIN,..." help:"Browser origins whose pages may call the API (CORS), or *."`
	OTelEndpoint        string        `name:"otel-endpoint" env:"PLANTSTORE_OTEL_ENDPOINT" placeholder:"URL" help:"Export traces over OTLP/HTTP to this collector URL (empty: off)."`
	OTelSampleRatio     float64       `name:"otel-sample-ratio" env:"PLANTSTORE_OTEL_SAMPLE_RATIO" default:"1" help:"The share of the traces started here that are recorded (0 to 1)."`
	OIDCIssuer          string        `name:"oidc-issuer" env:"PLANTSTORE_OIDC_ISSUER" placeholder:"URL" help:"Accept JWTs from this OpenID Connect issuer (needs --jwt-audience)."`
	JWTJWKSFile         string        `name:"jwt-jwks-file" env:"PLANTSTORE_JWT_JWKS_FILE" placeholder:"PATH" help:"Accept JWTs signed by a key of this local JWKS file."`
	JWTIssuer           string        `name:"jwt-issuer" env:"PLANTSTORE_JWT_ISSUER" help:"The iss a JWT must carry, with --jwt-jwks-file."`
	JWTAudience         string        `name:"jwt-audience" env:"PLANTSTORE_JWT_AUDIENCE" help:"A value a JWT's aud must contain (required with JWTs)."`
	JWTOwnerClaim       string        `name:"jwt-owner-claim" env:"PLANTSTORE_JWT_OWNER_CLAIM" default:"sub" help:"The JWT claim that names the owner."`
	JWTOwnerPrefix      string        `name:"jwt-owner-prefix" env:"PLANTSTORE_JWT_OWNER_PREFIX" placeholder:"PREFIX" help:"What a JWT's owner starts with (default: jwt:ISSUER#)."`
	JWTSharedOwners     bool          `name:"jwt-shared-owners" env:"PLANTSTORE_JWT_SHARED_OWNERS" help:"RISK: a JWT's owner is its claim as is, shared with opaque tokens'."`
}

// Help is the long help of serve.
func (c *serveCmd) Help() string {
	return "Each flag in full, with its limits and what it interacts with: docs/configuration.md."
}

// Run serves until ctx is cancelled (SIGTERM/SIGINT), then shuts down
// gracefully: stop accepting, finish in-flight requests, close the database.
func (c *serveCmd) Run(ctx context.Context, e *env) error {
	// On one CPU Go runs one goroutine at a time; while the group committer
	// sits in a cgo call (SQLite's fsync) the handlers would wait for the
	// scheduler to take the processor back, and batches stay tiny. A second
	// P lets them fill the next batch (measured: 8.2k -> 14.3k creates/s on
	// one pinned core; 4 or 8 Ps were slower than 2).
	if runtime.GOMAXPROCS(0) < 2 && e.getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2)
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	srv, err := wire(ctx, cfg, e)
	if err != nil {
		return err
	}
	defer srv.Close()
	return srv.Run(ctx)
}

// serveConfig is serve's configuration: its flags, checked once (config),
// with what they name read in (the --seed file's plants).
type serveConfig struct {
	*serveCmd
	seed []seedPlant
}

// config checks serve's flags, reads the --seed file and sets the database
// settings that serve's flags decide; nothing is opened yet.
func (c *serveCmd) config() (*serveConfig, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Seed != "" && !isMemory(c.DB) {
		return nil, invalidSetting("seed", "PLANTSTORE_SEED", "needs --db memory: (a sandbox); load plants into a database with plantstore plants import")
	}
	seed, err := c.readSeed()
	if err != nil {
		return nil, err
	}
	c.durability = sqlite.Durability(c.Durability)
	c.walAutocheckpoint = walAutocheckpoint(c.WALAutocheckpoint)
	c.create = c.createDBFlag.rule()
	c.memoryOK = true
	return &serveConfig{serveCmd: c, seed: seed}, nil
}

// app is what serve runs: its parts, each built once by wire. Run
// serves until ctx ends and shuts the HTTP server down; Close stops the
// other parts, the last built first.
type app struct {
	cfg    *serveConfig
	logs   *slogbuf.Handler
	logger *slog.Logger
	http   *plantstorehttp.Server
	stops  []func()
}

// onClose adds a stop for Close to run.
func (s *app) onClose(stop func()) { s.stops = append(s.stops, stop) }

// Close runs the stops, the last added first: the dispatcher records its
// attempts in flight, the database closes after committing what was
// queued, the last spans are exported, the last log lines flushed.
func (s *app) Close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// wire builds serve's parts once, each from those built before it: the log,
// the settings that reach out (the console's directory, the JWT issuer's
// keys), tracing, the metrics registry, the storage, the parts the
// webhook dispatcher and pinger share (wake signal, pings in flight,
// client), the pinger, the services, the dispatcher of their outbox, the
// first token and the seed, the background loops, the HTTP server. On an
// error it stops what it built.
func wire(ctx context.Context, cfg *serveConfig, e *env) (_ *app, err error) {
	c := cfg.serveCmd
	s := &app{cfg: cfg, logs: newLogHandler(e, c.LogLevel)}
	// Log lines are buffered (slogbuf.Handler): the last ones,
	// after the server's, are the dispatcher's and the database's, whose
	// stops run before this.
	s.onClose(func() { s.logs.Flush() })
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	logger := slog.New(s.logs)
	s.logger = logger
	consoleHandler, err := c.console()
	if err != nil {
		return nil, err
	}
	jwtVerifier, err := c.jwtVerifier(ctx)
	if err != nil {
		return nil, err
	}
	c.warnIgnored(logger, e.set)
	c.dbFlags.logger = logger
	c.warn = func(msg string) { logger.Warn(msg, "db", displayDB(c.DB)) }

	registry := plantstoreprometheus.NewRegistry()
	c.onCommit = plantstoreprometheus.CommitObserver(registry)
	c.onDropConns = func(cause error) {
		logger.Warn("database: dropped every pooled connection: the server is gone or read-only (a failover?); new ones go through the --db hosts again", "err", cause)
	}
	tp, err := c.tracerProvider(ctx)
	if err != nil {
		return nil, err
	}
	if tp != nil {
		// Stopped after the database and the dispatcher, so that their
		// last spans are exported.
		s.onClose(func() {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
			defer cancel()
			if err := tp.Shutdown(tctx); err != nil {
				logger.Warn("otel: export the last spans", "err", err)
			}
		})
		c.dbFlags.tracerProvider = tp
	}
	db, err := c.open(ctx, c.Migrate || isMemory(c.DB))
	if err != nil {
		return nil, err
	}
	s.onClose(func() { db.Close() })
	registerWALMetrics(registry, db)
	switch {
	case isMemory(c.DB):
		logger.Warn("the database is in memory: nothing is written to disk, everything is lost when serve exits", "db", c.DB)
	case c.created:
		logger.Warn("created a new, empty database", "db", c.DB)
	}

	// One clock for the services, the sender and the transport.
	now := time.Now
	sendOpts := sender.Options{AllowPrivate: c.WebhookAllowPrivate, Timeout: c.WebhookTimeout, Now: now}
	if tp != nil {
		sendOpts.TracerProvider = tp
	}
	svc := service.New(db, service.Config{
		Now:           now,
		TokenCacheTTL: c.TokenCacheTTL,
		OnTokenCache:  plantstoreprometheus.TokenCacheObserver(registry),
		OnEvent:       plantstoreprometheus.EventObserver(registry),

		MaxTokensPerOwner: c.MaxTokensPerOwner,

		MaxSubscriptions:    c.WebhookMaxSubs,
		WebhookDisableAfter: c.WebhookDisableAfter,
		Sender:              sender.New(sendOpts),
		Delivery:            c.deliveryConfig(logger, registry),
	})
	dispatcher, err := svc.NewDispatcher(svc.Outbox)
	if err != nil {
		return nil, err
	}
	s.logs.Flush() // bootstrap writes to stderr directly: keep the order
	if err := c.bootstrap(ctx, svc.Tokens, e, logger); err != nil {
		return nil, err
	}
	if err := c.seed(ctx, svc.Plants, cfg.seed, logger); err != nil {
		return nil, err
	}
	s.background(ctx, dispatcher.Run)
	s.background(ctx, func(ctx context.Context) { svc.Events.RunPruner(ctx, c.EventRetention, logger) })
	s.background(ctx, func(ctx context.Context) { svc.Tokens.RunPruner(ctx, c.TokenRetention, logger) })
	if c.DebugAddr != "" {
		stop, err := serveDebug(c.DebugAddr, logger)
		if err != nil {
			return nil, err
		}
		s.onClose(stop)
	}

	h := plantstorehttp.NewServer()
	h.Addr = c.Addr
	h.PlantService, h.TokenService, h.WebhookService = svc.Plants, svc.Tokens, svc.Webhooks
	h.EventService, h.EventNotifier = svc.Events, svc.Notifier
	h.EventStreamHeartbeat, h.EventStreamPoll, h.EventStreamMax = c.StreamHeartbeat, c.StreamPoll, c.StreamMax
	h.EventStreamMaxAge = c.StreamMaxAge
	h.Storage = db
	h.Logger = logger
	h.Now = now
	h.Registry = registry
	h.RateLimit, h.RateBurst = rate.Limit(c.RateLimit), c.RateBurst
	h.BatchMax = c.BatchMax
	h.AuthFailureLimit = c.AuthFailureLimit
	h.JWT = jwtVerifier
	h.CORSOrigins = c.CORSOrigins
	if tp != nil {
		h.TracerProvider = tp
	}
	h.PublicURL = c.PublicURL
	h.Console = consoleHandler
	h.MetricsAddr = c.metricsAddr()
	if err := h.Open(); err != nil {
		if errors.Is(err, plantstorehttp.ErrMetricsListen) {
			return nil, failedSetting("metrics-addr", "PLANTSTORE_METRICS_ADDR", "%v: give a free address, or --metrics-addr= (PLANTSTORE_METRICS_ADDR=off) to serve no metrics", err)
		}
		return nil, err
	}
	s.http = h
	return s, nil
}

// background runs loop on a context of its own until Close, which stops it
// and waits for it to return (the dispatcher then has recorded its
// attempts in flight).
func (s *app) background(ctx context.Context, loop func(context.Context)) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); loop(ctx) }()
	s.onClose(func() { stop(); <-done })
}

// Run logs the start, serves until ctx ends, then shuts the HTTP server
// down within --shutdown-timeout.
func (s *app) Run(ctx context.Context) error {
	c := s.cfg
	metrics := "off"
	if s.http.MetricsURL() != "" {
		metrics = s.http.MetricsURL() + "/metrics"
	}
	s.logger.Info("plantstore serving", append([]any{"addr", c.Addr, "url", s.http.URL(), "metrics", metrics, "db", displayDB(c.DB)},
		c.backendSettings()...)...)
	s.logs.Flush()

	<-ctx.Done()
	s.logger.Info("plantstore shutting down", "grace", c.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	// Close returns once the requests have been answered and their log
	// lines written into the buffer, which it flushes. Then Close stops
	// the rest.
	if err := s.http.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// tracerProvider starts tracing (package tracing) with --otel-endpoint; nil
// when it is empty (tracing off).
func (c *serveCmd) tracerProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	tp, err := tracing.Start(ctx, c.OTelEndpoint, c.OTelSampleRatio)
	if tracing.IsExporterError(err) {
		return nil, failedSetting("otel-endpoint", "PLANTSTORE_OTEL_ENDPOINT", "%v", err)
	}
	return tp, err
}

// backendSettings are the start-up log's attributes of the backend --db
// selects: its name and the settings that apply to it, and only those (a
// SQLite setting is not shown on PostgreSQL, nor the reverse).
func (c *serveCmd) backendSettings() []any {
	switch {
	case isPostgres(c.DB):
		return []any{"backend", "postgres", "db_max_conns", c.DBMaxConns, "db_statement_timeout", c.DBStatementTimeout.String(),
			"db_timeout", c.DBTimeout.String()}
	case isMemory(c.DB):
		// No file, no WAL: durability and checkpoints do not apply.
		return []any{"backend", "memory", "db_timeout", c.DBTimeout.String()}
	}
	return []any{"backend", "sqlite", "durability", c.Durability, "sqlite_wal_autocheckpoint", c.WALAutocheckpoint,
		"db_timeout", c.DBTimeout.String()}
}

// metricsAddr is --metrics-addr: "" and "off" (for the environment, where
// an empty variable is an unset one) turn the metrics listener off.
func (c *serveCmd) metricsAddr() string {
	if strings.EqualFold(strings.TrimSpace(c.MetricsAddr), "off") {
		return ""
	}
	return c.MetricsAddr
}

// oidcDiscoveryTimeout bounds OIDC discovery and the first JWKS fetch at start.
const oidcDiscoveryTimeout = 10 * time.Second

// tracingShutdownTimeout bounds exporting the last spans at exit.
const tracingShutdownTimeout = 5 * time.Second

// jwtVerifier checks the JWT flags and, when JWT tokens are on, loads the
// issuer's keys; it returns nil when they are off.
func (c *serveCmd) jwtVerifier(ctx context.Context) (plantstorehttp.JWTVerifier, error) {
	if c.OIDCIssuer == "" && c.JWTJWKSFile == "" {
		switch {
		case c.JWTIssuer != "":
			return nil, invalidSetting("jwt-issuer", "PLANTSTORE_JWT_ISSUER", "needs --jwt-jwks-file")
		case c.JWTAudience != "":
			return nil, invalidSetting("jwt-audience", "PLANTSTORE_JWT_AUDIENCE", "needs --oidc-issuer or --jwt-jwks-file")
		case c.JWTOwnerClaim != oidc.DefaultOwnerClaim:
			return nil, invalidSetting("jwt-owner-claim", "PLANTSTORE_JWT_OWNER_CLAIM", "needs --oidc-issuer or --jwt-jwks-file")
		case c.JWTOwnerPrefix != "":
			return nil, invalidSetting("jwt-owner-prefix", "PLANTSTORE_JWT_OWNER_PREFIX", "needs --oidc-issuer or --jwt-jwks-file")
		case c.JWTSharedOwners:
			return nil, invalidSetting("jwt-shared-owners", "PLANTSTORE_JWT_SHARED_OWNERS", "needs --oidc-issuer or --jwt-jwks-file")
		}
		return nil, nil
	}
	switch {
	case c.OIDCIssuer != "" && c.JWTJWKSFile != "":
		return nil, invalidSetting("oidc-issuer", "PLANTSTORE_OIDC_ISSUER", "excludes --jwt-jwks-file: use one")
	case c.OIDCIssuer != "" && c.JWTIssuer != "" && c.JWTIssuer != c.OIDCIssuer:
		return nil, invalidSetting("jwt-issuer", "PLANTSTORE_JWT_ISSUER", "is for --jwt-jwks-file; with --oidc-issuer the issuer is that URL")
	case c.JWTJWKSFile != "" && c.JWTIssuer == "":
		return nil, invalidSetting("jwt-jwks-file", "PLANTSTORE_JWT_JWKS_FILE", "needs --jwt-issuer (the iss its tokens carry)")
	case c.JWTAudience == "":
		return nil, invalidSetting("jwt-audience", "PLANTSTORE_JWT_AUDIENCE", "is required with --oidc-issuer or --jwt-jwks-file")
	case strings.TrimSpace(c.JWTOwnerClaim) == "":
		return nil, invalidSetting("jwt-owner-claim", "PLANTSTORE_JWT_OWNER_CLAIM", "must not be empty")
	}
	dctx, cancel := context.WithTimeout(ctx, oidcDiscoveryTimeout)
	defer cancel()
	v, err := oidc.NewVerifier(dctx, oidc.Config{
		OIDCIssuer:   c.OIDCIssuer,
		JWKSFile:     c.JWTJWKSFile,
		Issuer:       c.JWTIssuer,
		Audience:     c.JWTAudience,
		OwnerClaim:   c.JWTOwnerClaim,
		OwnerPrefix:  c.JWTOwnerPrefix,
		SharedOwners: c.JWTSharedOwners,
	})
	if err != nil {
		flag, env := "oidc-issuer", "PLANTSTORE_OIDC_ISSUER"
		switch {
		case errors.Is(err, oidc.ErrOwnerPrefix) && c.JWTSharedOwners:
			flag, env = "jwt-shared-owners", "PLANTSTORE_JWT_SHARED_OWNERS"
		case errors.Is(err, oidc.ErrOwnerPrefix):
			flag, env = "jwt-owner-prefix", "PLANTSTORE_JWT_OWNER_PREFIX"
		case c.JWTJWKSFile != "":
			flag, env = "jwt-jwks-file", "PLANTSTORE_JWT_JWKS_FILE"
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, failedSetting(flag, env, "no answer within %s: %v", oidcDiscoveryTimeout, err)
		}
		if errors.Is(err, oidc.ErrOwnerPrefix) {
			return nil, invalidSetting(flag, env, "%v", err)
		}
		return nil, failedSetting(flag, env, "%v", err)
	}
	return v, nil
}

// deliveryConfig configures the webhook deliveries and pings: the
// schedule scaled to --webhook-first-retry, the in-flight bounds, the
// attempt timeout and a lease past it.
func (c *serveCmd) deliveryConfig(logger *slog.Logger, reg prometheus.Registerer) service.DeliveryConfig {
	scale := float64(c.WebhookFirstRetry) / float64(service.DefaultSchedule[0])
	schedule := make([]time.Duration, len(service.DefaultSchedule))
	for i, d := range service.DefaultSchedule {
		schedule[i] = time.Duration(float64(d) * scale)
	}
	return service.DeliveryConfig{
		Logger:         logger,
		Metrics:        plantstoreprometheus.NewWebhookMetrics(reg, service.Outcomes),
		Concurrency:    c.WebhookConcurrency,
		MaxInFlight:    c.WebhookInFlight,
		AttemptTimeout: c.WebhookTimeout,
		Lease:          c.WebhookTimeout + 15*time.Second, // a crashed replica's claims free up this soon
		Schedule:       schedule,
		Retention:      c.WebhookRetention,
	}
}

// bootstrap creates the first token when there is none, so that
// `plantstore serve` alone gives a usable service.
func (c *serveCmd) bootstrap(ctx context.Context, tokens plantstore.TokenService, e *env, logger *slog.Logger) error {
	if !c.BootstrapAdmin && c.BootstrapToken == "" {
		return nil
	}
	// The first token is the operator's: every scope, webhooks:manage
	// included, so that every example of the README works with it. Tokens
	// with fewer scopes are made with token create.
	req := plantstore.TokenRequest{Owner: "admin", Secret: c.BootstrapToken, Scopes: plantstore.KnownScopes}
	tok, secret, created, err := tokens.CreateFirstToken(ctx, req)
	switch {
	case err != nil && c.BootstrapToken != "" && plantstore.ErrorCode(err) == plantstore.CodeInvalidBody:
		// The supplied secret is refused before any storage call.
		return fmt.Errorf("--bootstrap-token: %w", cliError(err))
	case err != nil:
		return err
	case !created && c.BootstrapToken != "":
		logger.Warn("--bootstrap-token (PLANTSTORE_BOOTSTRAP_TOKEN) is ignored: the database has tokens already; it only registers the first token of a database")
		return nil
	case !created:
		return nil
	}
	if c.BootstrapToken != "" {
		fmt.Fprintf(e.stderr, "plantstore: no tokens yet: registered the supplied bootstrap token for owner admin (%s, id %s).\n",
			strings.Join(tok.Scopes, " "), tok.ID)
		return nil
	}
	fmt.Fprintf(e.stderr, "plantstore: no tokens yet: created one for owner admin (%s, id %s). It is shown only now:\n\n    %s\n\n",
		strings.Join(tok.Scopes, " "), tok.ID, secret)
	if isMemory(c.DB) {
		fmt.Fprintf(e.stderr, "plantstore: the database is in memory: no other command reaches it, and this token is new at every start (--bootstrap-token SECRET: the same one every time)\n")
		return nil
	}
	fmt.Fprint(e.stderr, tokenCreateHint(c.DB))
	return nil
}

// tokenCreateHint is the line after the bootstrap token that says how to
// make more: a command that runs as printed. A postgres:// URL with a
// password is not printed whole (logs keep it), and its masked form would
// not connect: the command then reads the URL from $PLANTSTORE_DB, and a
// second line shows which URL that is, its password masked.
func tokenCreateHint(db string) string {
	const cmd = "plantstore: make more with: plantstore token create --owner NAME [--scope S ...] [--ttl DURATION] --db "
	if shown := displayDB(db); shown != db {
		return cmd + "\"$PLANTSTORE_DB\"\n" +
			"plantstore: PLANTSTORE_DB: this server's --db, " + shown + " (its password masked here)\n"
	}
	return cmd + shellQuote(db) + "\n"
}

// shellQuote quotes s for a POSIX shell when it holds a character the
// shell would take as syntax (a URL's ? and &, spaces).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:@,+=%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newLogHandler logs JSON lines to stderr, or text when stderr is a
// terminal, through a buffer: lines go out at most
// slogbuf.FlushInterval after they are logged, warnings and
// errors at once; the caller flushes it after its last line.
func newLogHandler(e *env, level string) *slogbuf.Handler {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	f, ok := e.stderr.(*os.File)
	return slogbuf.New(e.stderr, ok && term.IsTerminal(int(f.Fd())), opts)
}

// serveDebug serves net/http/pprof on its own listener, apart from the API.
func serveDebug(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go srv.Serve(ln)
	logger.Info("pprof serving", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// console returns the handler of /console: nil with --console=false, the
// directory's with --console-dir, else the embedded one.
func (c *serveCmd) console() (http.Handler, error) {
	if !c.Console {
		return nil, nil
	}
	if c.ConsoleDir != "" {
		h, err := console.Dir(c.ConsoleDir)
		if err != nil {
			return nil, failedSetting("console-dir", "PLANTSTORE_CONSOLE_DIR", "%v", err)
		}
		return h, nil
	}
	return console.New()
}
