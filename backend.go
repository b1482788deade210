package plantstore

import "context"

// Backend is a storage backend: the row stores and their lifecycle
// (internal/sqlite, internal/postgres). It owns its driver code,
// transactions, group commit, retries and timeouts, and nothing else: every
// business rule and every timestamp comes from the service layer.
type Backend interface {
	PlantStore
	TokenStore
	WebhookStore
	OutboxStore
	EventStore

	// Open connects and checks that the storage answers; it does not migrate.
	Open(ctx context.Context) error
	// Migrate applies pending migrations, each in its own transaction,
	// under a lock, and returns how many. It refuses a schema newer than
	// this binary knows (*SchemaTooNewError).
	Migrate(ctx context.Context) (applied int, err error)
	// SchemaStatus returns the database's schema version and the newest known.
	SchemaStatus(ctx context.Context) (current, known int64, err error)
	// Ping reports whether the storage can serve writes now (GET /readyz),
	// else ErrUnavailable wrapping the cause. PostgreSQL answers from its
	// recent writes when there are any (docs/observability.md).
	Ping(ctx context.Context) error
	// Close commits the writes already queued, then releases the resources.
	Close() error
}
