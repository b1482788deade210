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
	"golang.org/x/term"
	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/http"
	"github.com/plantstore/plantstore/service"
	"github.com/plantstore/plantstore/sqlite"
	"github.com/plantstore/plantstore/webhook"
)

// serveCmd is `plantstore serve`.
type serveCmd struct {
	dbFlags
	createDBFlag
	Durability          string        `env:"PLANTSTORE_DURABILITY" default:"full" enum:"full,relaxed" help:"SQLite: full: a write is acknowledged only after it is fsynced (survives power loss); relaxed: survives a process crash, may lose the last writes on power loss. On PostgreSQL durability is the server's (synchronous_commit)."`
	WALAutocheckpoint   int           `name:"sqlite-wal-autocheckpoint" env:"PLANTSTORE_SQLITE_WAL_AUTOCHECKPOINT" default:"1000" placeholder:"PAGES" help:"SQLite: checkpoint the WAL into the database file after a commit that leaves this many pages (4 KiB each) or more in it (PRAGMA wal_autocheckpoint). 0: never: the WAL then grows until another process checkpoints it. With Litestream keep the default (measured: docs/deployment.md)."`
	Addr                string        `env:"PLANTSTORE_ADDR" default:":8080" help:"Address to listen on."`
	PublicURL           string        `name:"public-url" env:"PLANTSTORE_PUBLIC_URL" placeholder:"URL" help:"The servers URL of the document served at /openapi.json (an absolute http(s) URL without query or fragment, e.g. https://api.example.com, behind a proxy). Default: relative (/), the server that served the document."`
	Migrate             bool          `env:"PLANTSTORE_MIGRATE" default:"true" negatable:"" help:"Apply pending schema migrations at start (--no-migrate: refuse to start on an old schema instead)."`
	BootstrapAdmin      bool          `env:"PLANTSTORE_BOOTSTRAP_ADMIN" default:"true" negatable:"" help:"When the database has no token at all, create one for owner admin and print it once on stderr."`
	BootstrapToken      string        `env:"PLANTSTORE_BOOTSTRAP_TOKEN" help:"Use this secret (32-256 visible ASCII characters) as the first admin token instead of generating one."`
	Seed                string        `name:"seed" env:"PLANTSTORE_SEED" type:"path" placeholder:"FILE" help:"With --db memory: only: create the plants of FILE (JSON lines or CSV, as plants import reads them) for owner admin before serving; a line that is not a valid plant stops the start, naming it."`
	TokenCacheTTL       time.Duration `env:"PLANTSTORE_TOKEN_CACHE_TTL" default:"2s" help:"How long a verified token is trusted without a database lookup: a revoked token is refused within this time on every replica (0: immediately, one lookup per request)."`
	RateLimit           float64       `env:"PLANTSTORE_RATE_LIMIT" default:"1000" help:"Requests per second allowed to each token (0: no limit)."`
	RateBurst           int           `env:"PLANTSTORE_RATE_BURST" default:"2000" help:"Requests a token may send at once before the rate limit applies."`
	AuthFailureLimit    float64       `env:"PLANTSTORE_AUTH_FAILURE_LIMIT" default:"60" help:"Failed authentications (401s) per minute allowed to each client IP, with a burst of 20; past it, that IP's requests with a missing or bad token get 429 (valid tokens still work). The IP is the TCP peer, X-Forwarded-For is not trusted: behind a proxy all clients share one. 0: no limit."`
	ShutdownTimeout     time.Duration `env:"PLANTSTORE_SHUTDOWN_TIMEOUT" default:"15s" help:"How long in-flight requests may run after SIGTERM/SIGINT."`
	WebhookAllowPrivate bool          `env:"PLANTSTORE_WEBHOOK_ALLOW_PRIVATE" help:"Let webhook deliveries reach loopback, private and link-local addresses (refused by default, checked on the resolved address at connect time)."`
	WebhookConcurrency  int           `env:"PLANTSTORE_WEBHOOK_CONCURRENCY" default:"32" help:"Webhook deliveries in flight at once per process. One owner gets at most a quarter of them (at least 1), so that its hanging receivers cannot hold them all."`
	WebhookInFlight     int           `name:"webhook-max-in-flight" env:"PLANTSTORE_WEBHOOK_MAX_IN_FLIGHT" default:"2" help:"Webhook deliveries in flight at once to one subscription, counted over every replica."`
	WebhookMaxSubs      int           `name:"webhook-max-subscriptions" env:"PLANTSTORE_WEBHOOK_MAX_SUBSCRIPTIONS" default:"16" help:"Webhook subscriptions one owner may have, disabled ones included (1..1000); past it POST /webhooks answers 409 (error 40902). It also bounds the deliveries one plant create writes."`
	WebhookTimeout      time.Duration `env:"PLANTSTORE_WEBHOOK_TIMEOUT" default:"15s" help:"Time limit of one webhook delivery attempt."`
	WebhookFirstRetry   time.Duration `env:"PLANTSTORE_WEBHOOK_FIRST_RETRY" default:"5s" help:"Delay before the first retry of a failed delivery; the later ones scale with it (default: 11 attempts over about a day)."`
	WebhookDisableAfter time.Duration `env:"PLANTSTORE_WEBHOOK_DISABLE_AFTER" default:"120h" help:"Disable a subscription whose delivery attempts have all failed for longer than this, at its next failed attempt (GET /webhooks/{id} then shows disabled_reason failing). 0: never (a 410 still disables it)."`
	WebhookRetention    time.Duration `env:"PLANTSTORE_WEBHOOK_RETENTION" default:"720h" help:"How long delivery history is kept: attempts and finished deliveries older than this are deleted, 500 rows a statement, a pass a minute. 0 keeps everything."`
	EventRetention      time.Duration `env:"PLANTSTORE_EVENT_RETENTION" default:"720h" help:"How long events (GET /events, the event stream) are kept: older ones are deleted in the background, 500 a statement, a pass a minute; a client resuming after a gap this long misses the ones deleted (the next seq is higher than its cursor plus one). 0 keeps everything."`
	StreamHeartbeat     time.Duration `name:"event-stream-heartbeat" env:"PLANTSTORE_EVENT_STREAM_HEARTBEAT" default:"15s" help:"GET /events/stream: send a comment line (: heartbeat) on a stream that sent nothing for this long, and check its token again then (a revoked or expired token's stream ends). 1s to 10m."`
	StreamPoll          time.Duration `name:"event-stream-poll" env:"PLANTSTORE_EVENT_STREAM_POLL" default:"1s" help:"GET /events/stream: how often each stream reads the database for events this process did not write (another replica's on the same PostgreSQL); events written here wake it at once. 100ms to 1m."`
	StreamMax           int           `name:"event-stream-max" env:"PLANTSTORE_EVENT_STREAM_MAX" default:"1000" help:"GET /events/stream: streams open at once on this server, one owner at most a quarter of them (at least 1); past either, 429 (error 42902). 1 to 100000."`
	DebugAddr           string        `env:"PLANTSTORE_DEBUG_ADDR" help:"Serve Go's pprof profiles (/debug/pprof/) on this separate address, e.g. 127.0.0.1:6060; off when empty. Never expose it publicly."`
	LogLevel            string        `env:"PLANTSTORE_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn, error."`
	CORSOrigins         []string      `name:"cors-origins" env:"PLANTSTORE_CORS_ORIGINS" placeholder:"ORIGIN,..." help:"Browser origins whose pages may call the API (CORS), comma-separated, each scheme://host[:port] with no path (e.g. https://app.example,http://localhost:5173), or * alone for any origin. Their preflights are answered 204 before authentication; their answers, errors included, carry Access-Control-Allow-Origin and expose the API's headers. Credentials (cookies) are never allowed: the API takes bearer tokens. Empty: no CORS headers at all."`
	OTelEndpoint        string        `name:"otel-endpoint" env:"PLANTSTORE_OTEL_ENDPOINT" placeholder:"URL" help:"Export OpenTelemetry traces over OTLP/HTTP to this collector URL (e.g. http://127.0.0.1:4318; /v1/traces is appended unless the path ends with it): a span per request, per commit batch and per webhook attempt, with traceparent on deliveries. The standard OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and _CERTIFICATE variables apply. Empty: no tracing, at no cost."`
	OTelSampleRatio     float64       `name:"otel-sample-ratio" env:"PLANTSTORE_OTEL_SAMPLE_RATIO" default:"1" help:"With --otel-endpoint: the share of traces started here that are recorded, 0 to 1; a request whose traceparent says sampled is always recorded."`
	OIDCIssuer          string        `name:"oidc-issuer" env:"PLANTSTORE_OIDC_ISSUER" placeholder:"URL" help:"Accept JWT access tokens from this OpenID Connect issuer too: its keys come from URL/.well-known/openid-configuration (fetched at start, at most 10s) and are fetched again for an unknown key id. Needs --jwt-audience."`
	JWTJWKSFile         string        `name:"jwt-jwks-file" env:"PLANTSTORE_JWT_JWKS_FILE" placeholder:"PATH" help:"Accept JWT access tokens signed by a key of this local JWKS file (offline setups; instead of --oidc-issuer). Needs --jwt-issuer and --jwt-audience."`
	JWTIssuer           string        `name:"jwt-issuer" env:"PLANTSTORE_JWT_ISSUER" help:"The iss a JWT must carry, with --jwt-jwks-file (with --oidc-issuer it is that URL)."`
	JWTAudience         string        `name:"jwt-audience" env:"PLANTSTORE_JWT_AUDIENCE" help:"A value the aud of a JWT must contain (this API's identifier at the issuer); required with --oidc-issuer or --jwt-jwks-file."`
	JWTOwnerClaim       string        `name:"jwt-owner-claim" env:"PLANTSTORE_JWT_OWNER_CLAIM" default:"sub" help:"The JWT claim (a non-empty string) whose value, after --jwt-owner-prefix, is the owner."`
	JWTOwnerPrefix      string        `name:"jwt-owner-prefix" env:"PLANTSTORE_JWT_OWNER_PREFIX" placeholder:"PREFIX" help:"Put this before the owner claim to make a JWT's owner (default: jwt:ISSUER#, so owners are jwt:ISSUER#SUB), keeping JWT owners apart from opaque tokens' owners. At most 192 bytes; an owner over 256 bytes is refused (401)."`
	JWTSharedOwners     bool          `name:"jwt-shared-owners" env:"PLANTSTORE_JWT_SHARED_OWNERS" help:"RISK: make a JWT's owner the claim's value as is, shared with opaque tokens' owners: a JWT whose claim is admin then reads and changes owner admin's plants and webhooks (secrets included). Only for an issuer trusted to name any owner. Excludes --jwt-owner-prefix."`
}

// Run serves until ctx is cancelled (SIGTERM/SIGINT), then shuts down
// gracefully: stop accepting, finish in-flight requests, close the database.
func (c *serveCmd) Run(ctx context.Context, e *env) error {
	logHandler := newLogHandler(e, c.LogLevel)
	// Log lines are buffered (plantstorehttp.LogHandler): the last ones,
	// after the server's, are the dispatcher's and the database's, whose
	// deferred stops run before this.
	defer logHandler.Flush()
	logger := slog.New(logHandler)
	// On one CPU Go runs one goroutine at a time; while the group committer
	// sits in a cgo call (SQLite's fsync) the handlers would wait for the
	// scheduler to take the processor back, and batches stay tiny. A second
	// P lets them fill the next batch (measured: 8.2k -> 14.3k creates/s on
	// one pinned core; 4 or 8 Ps were slower than 2).
	if runtime.GOMAXPROCS(0) < 2 && e.getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2)
	}
	if err := c.validate(); err != nil {
		return err
	}
	jwtVerifier, err := c.jwtVerifier(ctx)
	if err != nil {
		return err
	}
	if c.Seed != "" && !isMemory(c.DB) {
		return invalidSetting("seed", "PLANTSTORE_SEED", "needs --db memory: (a sandbox); load plants into a database with plantstore plants import")
	}
	seed, err := c.readSeed()
	if err != nil {
		return err
	}
	c.warnIgnored(logger, e.set)
	c.durability = sqlite.Durability(c.Durability)
	c.walAutocheckpoint = walAutocheckpoint(c.WALAutocheckpoint)
	c.create = c.createDBFlag.rule()
	c.memoryOK = true
	registry := plantstorehttp.NewRegistry()
	c.onCommit = plantstorehttp.CommitObserver(registry)
	c.onDropConns = func(cause error) {
		logger.Warn("database: dropped every pooled connection: the server is gone or read-only (a failover?); new ones go through the --db hosts again", "err", cause)
	}
	tracing, err := c.newTracing(ctx)
	if err != nil {
		return err
	}
	// Registered before the database's and the dispatcher's stops: runs
	// after them, so their last spans are exported.
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
		defer cancel()
		if err := tracing.shutdown(tctx); err != nil {
			logger.Warn("otel: export the last spans", "err", err)
		}
	}()
	if tracing != nil {
		c.tracerProvider = tracing.provider
	}
	db, err := c.open(ctx, c.Migrate || isMemory(c.DB))
	if err != nil {
		return err
	}
	defer db.Close()
	registerWALMetrics(registry, db)
	switch {
	case isMemory(c.DB):
		logger.Warn("the database is in memory: nothing is written to disk, everything is lost when serve exits", "db", c.DB)
	case c.created:
		logger.Warn("created a new, empty database", "db", c.DB)
	}

	// One clock for the services, the dispatcher and the transport. The
	// dispatcher exists first so the plant service can wake it after a
	// commit; it gets its outbox from the services.
	now := time.Now
	dispatcher := c.dispatcher(logger, registry)
	if tracing != nil {
		dispatcher.TracerProvider = tracing.provider
	}
	svc := service.New(db, service.Config{
		Now:           now,
		Notify:        dispatcher.Notify,
		TokenCacheTTL: c.TokenCacheTTL,
		OnTokenCache:  plantstorehttp.TokenCacheObserver(registry),
		OnEvent:       plantstorehttp.EventObserver(registry),

		MaxSubscriptions:    c.WebhookMaxSubs,
		WebhookDisableAfter: c.WebhookDisableAfter,
		Ping:                dispatcher.Ping,
	})
	dispatcher.Outbox, dispatcher.Now = svc.Outbox, now
	logHandler.Flush() // bootstrap writes to stderr directly: keep the order
	if err := c.bootstrap(ctx, svc.Tokens, e, logger); err != nil {
		return err
	}
	if err := c.seed(ctx, svc.Plants, seed, logger); err != nil {
		return err
	}

	dctx, stopDispatcher := context.WithCancel(context.WithoutCancel(ctx))
	dispatched := make(chan error, 1)
	go func() { dispatched <- dispatcher.Run(dctx) }()
	defer func() {
		stopDispatcher()
		<-dispatched
	}()
	pctx, stopPruner := context.WithCancel(context.WithoutCancel(ctx))
	pruned := make(chan struct{})
	go func() { defer close(pruned); svc.Events.RunPruner(pctx, c.EventRetention, logger) }()
	defer func() {
		stopPruner()
		<-pruned
	}()

	s := plantstorehttp.NewServer()
	s.Addr = c.Addr
	s.PlantService, s.TokenService, s.WebhookService = svc.Plants, svc.Tokens, svc.Webhooks
	s.EventService, s.EventNotifier = svc.Events, svc.Notifier
	s.EventStreamHeartbeat, s.EventStreamPoll, s.EventStreamMax = c.StreamHeartbeat, c.StreamPoll, c.StreamMax
	s.Storage = db
	s.Logger = logger
	s.Now = now
	s.Registry = registry
	s.RateLimit, s.RateBurst = rate.Limit(c.RateLimit), c.RateBurst
	s.AuthFailureLimit = c.AuthFailureLimit
	s.JWT = jwtVerifier
	s.CORSOrigins = c.CORSOrigins
	if tracing != nil {
		s.TracerProvider = tracing.provider
	}
	s.PublicURL = c.PublicURL
	if err := s.Open(); err != nil {
		return err
	}
	if c.DebugAddr != "" {
		stop, err := serveDebug(c.DebugAddr, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	durability := c.Durability
	if isMemory(c.DB) {
		durability = "none (memory)"
	}
	logger.Info("plantstore serving", "addr", c.Addr, "url", s.URL(), "db", displayDB(c.DB), "durability", durability)
	logHandler.Flush()

	<-ctx.Done()
	logger.Info("plantstore shutting down", "grace", c.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	// Close returns once the requests have been answered and their log
	// lines written into the buffer, which it flushes.
	if err := s.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	// Then the dispatcher (deferred above) records its attempts in flight,
	// the database closes after committing what was queued, and the last
	// log lines are flushed.
	return nil
}

// oidcDiscoveryTimeout bounds OIDC discovery and the first JWKS fetch at start.
const oidcDiscoveryTimeout = 10 * time.Second

// tracingShutdownTimeout bounds exporting the last spans at exit.
const tracingShutdownTimeout = 5 * time.Second

// jwtVerifier checks the JWT flags and, when JWT tokens are on, loads the
// issuer's keys; it returns nil when they are off.
func (c *serveCmd) jwtVerifier(ctx context.Context) (*plantstorehttp.JWTVerifier, error) {
	if c.OIDCIssuer == "" && c.JWTJWKSFile == "" {
		switch {
		case c.JWTIssuer != "":
			return nil, invalidSetting("jwt-issuer", "PLANTSTORE_JWT_ISSUER", "needs --jwt-jwks-file")
		case c.JWTAudience != "":
			return nil, invalidSetting("jwt-audience", "PLANTSTORE_JWT_AUDIENCE", "needs --oidc-issuer or --jwt-jwks-file")
		case c.JWTOwnerClaim != plantstorehttp.DefaultJWTOwnerClaim:
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
	v, err := plantstorehttp.NewJWTVerifier(dctx, plantstorehttp.JWTConfig{
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
		case errors.Is(err, plantstorehttp.ErrJWTOwnerPrefix) && c.JWTSharedOwners:
			flag, env = "jwt-shared-owners", "PLANTSTORE_JWT_SHARED_OWNERS"
		case errors.Is(err, plantstorehttp.ErrJWTOwnerPrefix):
			flag, env = "jwt-owner-prefix", "PLANTSTORE_JWT_OWNER_PREFIX"
		case c.JWTJWKSFile != "":
			flag, env = "jwt-jwks-file", "PLANTSTORE_JWT_JWKS_FILE"
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, failedSetting(flag, env, "no answer within %s: %v", oidcDiscoveryTimeout, err)
		}
		if errors.Is(err, plantstorehttp.ErrJWTOwnerPrefix) {
			return nil, invalidSetting(flag, env, "%v", err)
		}
		return nil, failedSetting(flag, env, "%v", err)
	}
	return v, nil
}

// dispatcher builds the webhook dispatcher; the caller sets its Outbox.
func (c *serveCmd) dispatcher(logger *slog.Logger, reg prometheus.Registerer) *webhook.Dispatcher {
	scale := float64(c.WebhookFirstRetry) / float64(webhook.DefaultSchedule[0])
	schedule := make([]time.Duration, len(webhook.DefaultSchedule))
	for i, d := range webhook.DefaultSchedule {
		schedule[i] = time.Duration(float64(d) * scale)
	}
	return &webhook.Dispatcher{
		Client:         webhook.NewClient(webhook.ClientOptions{AllowPrivate: c.WebhookAllowPrivate, Timeout: c.WebhookTimeout}),
		Logger:         logger,
		Metrics:        webhook.NewMetrics(reg),
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
	req := plantstore.TokenRequest{Owner: "admin", Secret: c.BootstrapToken}
	if isMemory(c.DB) {
		// The only token of a memory: server (no other command reaches
		// it): every scope, webhooks:manage included.
		req.Scopes = plantstore.KnownScopes
	}
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
	fmt.Fprintf(e.stderr, "plantstore: make more with: plantstore token create --owner NAME [--scope S ...] [--ttl DURATION] --db %s\n", displayDB(c.DB))
	return nil
}

// newLogHandler logs JSON lines to stderr, or text when stderr is a
// terminal, through a buffer: lines go out at most
// plantstorehttp.LogFlushInterval after they are logged, warnings and
// errors at once; the caller flushes it after its last line.
func newLogHandler(e *env, level string) *plantstorehttp.LogHandler {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	f, ok := e.stderr.(*os.File)
	return plantstorehttp.NewLogHandler(e.stderr, ok && term.IsTerminal(int(f.Fd())), opts)
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
