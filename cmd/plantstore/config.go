package main

import (
	"fmt"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/tracing"
)

// maxMaxTokensPerOwner bounds --max-tokens-per-owner: the live tokens of
// one owner are counted at every mint.
const maxMaxTokensPerOwner = 1000000

// maxBatchMax bounds --batch-max: a batch is one transaction that holds
// the write lock while it runs, and its body may be 2 KiB a plant.
const maxBatchMax = 10000

// validate checks serve's settings once, before anything starts, and names
// the setting (flag and environment variable) that is wrong.
func (c *serveCmd) validate() error {
	switch {
	case c.RateLimit < 0:
		return invalidSetting("rate-limit", "PLANTSTORE_RATE_LIMIT", "must not be negative (0: no limit), got %v", c.RateLimit)
	case c.WALAutocheckpoint < 0:
		return invalidSetting("sqlite-wal-autocheckpoint", "PLANTSTORE_SQLITE_WAL_AUTOCHECKPOINT", "must not be negative (0: off), got %d", c.WALAutocheckpoint)
	case c.RateBurst < 0:
		return invalidSetting("rate-burst", "PLANTSTORE_RATE_BURST", "must not be negative, got %d", c.RateBurst)
	case c.AuthFailureLimit < 0:
		return invalidSetting("auth-failure-limit", "PLANTSTORE_AUTH_FAILURE_LIMIT", "must not be negative (0: no limit), got %v", c.AuthFailureLimit)
	case c.BatchMax < 1 || c.BatchMax > maxBatchMax:
		return invalidSetting("batch-max", "PLANTSTORE_BATCH_MAX", "must be from 1 to %d, got %d", maxBatchMax, c.BatchMax)
	case c.MaxTokensPerOwner < 1 || c.MaxTokensPerOwner > maxMaxTokensPerOwner:
		return invalidSetting("max-tokens-per-owner", "PLANTSTORE_MAX_TOKENS_PER_OWNER", "must be from 1 to %d, got %d", maxMaxTokensPerOwner, c.MaxTokensPerOwner)
	case c.TokenRetention < 0:
		return invalidSetting("token-retention", "PLANTSTORE_TOKEN_RETENTION", "must not be negative (0: keep everything), got %v", c.TokenRetention)
	case c.TokenCacheTTL < 0 || c.TokenCacheTTL > time.Minute:
		return invalidSetting("token-cache-ttl", "PLANTSTORE_TOKEN_CACHE_TTL", "must be from 0 to 1m, got %v", c.TokenCacheTTL)
	case c.ShutdownTimeout <= 0:
		return invalidSetting("shutdown-timeout", "PLANTSTORE_SHUTDOWN_TIMEOUT", "must be positive, got %v", c.ShutdownTimeout)
	case c.WebhookConcurrency < 1:
		return invalidSetting("webhook-concurrency", "PLANTSTORE_WEBHOOK_CONCURRENCY", "must be at least 1, got %d", c.WebhookConcurrency)
	// The two webhook durations that set stored times (an attempt's lease,
	// the retries' next_attempt_at) are bounded, so those stay in range.
	case c.WebhookTimeout <= 0 || c.WebhookTimeout > time.Hour:
		return invalidSetting("webhook-timeout", "PLANTSTORE_WEBHOOK_TIMEOUT", "must be positive and at most 1h, got %v", c.WebhookTimeout)
	case c.WebhookFirstRetry <= 0 || c.WebhookFirstRetry > time.Hour:
		return invalidSetting("webhook-first-retry", "PLANTSTORE_WEBHOOK_FIRST_RETRY", "must be positive and at most 1h (the last retry comes about 5760 times later), got %v", c.WebhookFirstRetry)
	case c.WebhookInFlight < 1:
		return invalidSetting("webhook-max-in-flight", "PLANTSTORE_WEBHOOK_MAX_IN_FLIGHT", "must be at least 1, got %d", c.WebhookInFlight)
	case c.WebhookMaxSubs < 1 || c.WebhookMaxSubs > plantstore.MaxMaxSubscriptions:
		return invalidSetting("webhook-max-subscriptions", "PLANTSTORE_WEBHOOK_MAX_SUBSCRIPTIONS", "must be from 1 to %d, got %d",
			plantstore.MaxMaxSubscriptions, c.WebhookMaxSubs)
	case c.WebhookDisableAfter < 0:
		return invalidSetting("webhook-disable-after", "PLANTSTORE_WEBHOOK_DISABLE_AFTER", "must not be negative (0: never), got %v", c.WebhookDisableAfter)
	case c.WebhookRetention < 0:
		return invalidSetting("webhook-retention", "PLANTSTORE_WEBHOOK_RETENTION", "must not be negative (0: keep everything), got %v", c.WebhookRetention)
	case c.EventRetention < 0:
		return invalidSetting("event-retention", "PLANTSTORE_EVENT_RETENTION", "must not be negative (0: keep everything), got %v", c.EventRetention)
	case c.StreamHeartbeat < time.Second || c.StreamHeartbeat > 10*time.Minute:
		return invalidSetting("event-stream-heartbeat", "PLANTSTORE_EVENT_STREAM_HEARTBEAT", "must be from 1s to 10m, got %v", c.StreamHeartbeat)
	case c.StreamPoll < 100*time.Millisecond || c.StreamPoll > time.Minute:
		return invalidSetting("event-stream-poll", "PLANTSTORE_EVENT_STREAM_POLL", "must be from 100ms to 1m, got %v", c.StreamPoll)
	case c.StreamMax < 1 || c.StreamMax > 100000:
		return invalidSetting("event-stream-max", "PLANTSTORE_EVENT_STREAM_MAX", "must be from 1 to 100000, got %d", c.StreamMax)
	case c.StreamMaxAge < time.Second || c.StreamMaxAge > 24*time.Hour:
		return invalidSetting("event-stream-max-age", "PLANTSTORE_EVENT_STREAM_MAX_AGE", "must be from 1s to 24h, got %v", c.StreamMaxAge)
	}
	if err := plantstorehttp.CheckCORSOrigins(c.CORSOrigins); err != nil {
		return invalidSetting("cors-origins", "PLANTSTORE_CORS_ORIGINS", "%v", err)
	}
	if c.OTelEndpoint != "" {
		if _, err := tracing.TracesURL(c.OTelEndpoint); err != nil {
			return invalidSetting("otel-endpoint", "PLANTSTORE_OTEL_ENDPOINT", "%v, got %q", err, c.OTelEndpoint)
		}
	}
	if c.OTelSampleRatio < 0 || c.OTelSampleRatio > 1 {
		return invalidSetting("otel-sample-ratio", "PLANTSTORE_OTEL_SAMPLE_RATIO", "must be from 0 to 1, got %v", c.OTelSampleRatio)
	}
	if c.ConsoleDir != "" && !c.Console {
		return invalidSetting("console-dir", "PLANTSTORE_CONSOLE_DIR", "serves the console, which --console=false turns off: give one of them")
	}
	if c.PublicURL != "" {
		if err := plantstorehttp.CheckPublicURL(c.PublicURL); err != nil {
			return invalidSetting("public-url", "PLANTSTORE_PUBLIC_URL", "%v, got %q", err, c.PublicURL)
		}
	}
	return nil
}

// invalidSetting is the error for a setting with a bad value: a usage
// error (exit status 2).
func invalidSetting(flag, env, format string, args ...any) error {
	return &cliexit.UsageError{Err: failedSetting(flag, env, format, args...)}
}

// failedSetting is the error for a setting whose value is well-formed but
// did not work (an issuer that does not answer, a file that cannot be
// read): exit status 1.
func failedSetting(flag, env, format string, args ...any) error {
	return fmt.Errorf("invalid setting --%s (%s): %s", flag, env, fmt.Sprintf(format, args...))
}
