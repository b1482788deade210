package plantstore

import "context"

// Backend is a storage backend: the row stores and their lifecycle. The
// sqlite and postgres packages implement it; storetest holds the
// conformance suite both pass; cmd/, bench/ and the tests use nothing else.
//
// A backend owns its driver code, transactions, group commit, retries and
// timeouts, and nothing else: every business rule (validation, replay and
// conflict, messages, ids and secrets, the clock) is the service layer's.
// Every timestamp it stores comes from its caller.
type Backend interface {
	PlantStore
	TokenStore
	WebhookStore
	OutboxStore
	EventStore

	// Open connects (SQLite: opens the file, or creates it unless
	// sqlite.DB.MustExist) and checks that the storage answers. It does not
	// migrate.
	Open(ctx context.Context) error
	// Migrate applies pending schema migrations, each in its own
	// transaction, under a lock so that processes starting at once take
	// turns, and returns how many it applied. It refuses a schema newer
	// than this binary knows (*SchemaTooNewError).
	Migrate(ctx context.Context) (applied int, err error)
	// SchemaStatus returns the schema version of the database and the
	// newest one this binary knows.
	SchemaStatus(ctx context.Context) (current, known int64, err error)
	// Ping reports whether the storage can serve now (GET /readyz):
	// ErrUnavailable, wrapping the cause, when it cannot. Every backend
	// checks that the storage answers and that its writes succeed;
	// PostgreSQL answers from its last writes when they are recent (a
	// commit: ready; a failure of the storage: not ready), SQLite also
	// checks that its file is still the one it opened and that its writes
	// do not stall.
	Ping(ctx context.Context) error
	// Close commits the writes already queued, then releases the
	// resources. Writes that arrive later fail.
	Close() error
}
