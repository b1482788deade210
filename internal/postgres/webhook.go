package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore"
)

// subscriptionColumns is a subscription's select list, from the table
// aliased s; a missing previous secret or reason (NULL) reads as "".
const subscriptionColumns = `s.id, s.owner, s.url, s.description, s.secret, COALESCE(s.previous_secret, ''), s.previous_secret_until,
	s.created_at, s.disabled_at, COALESCE(s.disabled_reason, ''), s.failing_since, s.event_mask`

// Statements of InsertSubscription, sent as one implicit transaction. The
// first takes the owner's lock row (creating it if need be), so that the
// count of the second, which starts after the lock is held and so sees
// every create that held it before, cannot interleave with another create
// of the owner: READ COMMITTED takes a fresh snapshot per statement.
const (
	qLockOwner          = `INSERT INTO webhook_owners (owner) VALUES ($1) ON CONFLICT (owner) DO UPDATE SET owner = EXCLUDED.owner`
	qInsertSubscription = `INSERT INTO webhook_subscriptions
	(id, owner, url, description, secret, previous_secret, previous_secret_until, created_at, disabled_at, disabled_reason, failing_since, event_mask)
SELECT $1::TEXT, $2::TEXT, $3::TEXT, $4::TEXT, $5::TEXT, NULLIF($6::TEXT, ''), $7::TIMESTAMPTZ, $8::TIMESTAMPTZ, $9::TIMESTAMPTZ,
	NULLIF($10::TEXT, ''), $11::TIMESTAMPTZ, $13::BIGINT
WHERE (SELECT COUNT(*) FROM webhook_subscriptions WHERE owner = $2) < $12`
)

// InsertSubscription stores s, or returns plantstore.ErrExists when its id
// is taken, or plantstore.ErrLimit when its owner has max subscriptions or
// more.
func (db *DB) InsertSubscription(ctx context.Context, s *plantstore.Subscription, max int) error {
	err := db.sendBatch(ctx, func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(qLockOwner, s.Owner)
		b.Queue(qInsertSubscription, s.ID, s.Owner, s.URL, s.Description, s.Secret, s.PreviousSecret, s.PreviousSecretUntil,
			s.CreatedAt, s.DisabledAt, string(s.DisabledReason), s.FailingSince, max, int64(plantstore.Mask(s.Types))).
			Exec(func(tag pgconn.CommandTag) error {
				if tag.RowsAffected() == 0 {
					return plantstore.ErrLimit
				}
				return nil
			})
		return b
	})
	return wrap("insert webhook", existsIfDuplicate(err))
}

// sendBatch sends the batch that build makes, which writes, as one
// implicit transaction (with the session settings), within OpTimeout,
// with retries (build runs again for each try), and records the outcome
// (wrote). Errors come back unwrapped; a warning while it commits is an
// outcomeUnknownError.
func (db *DB) sendBatch(ctx context.Context, build func() *pgx.Batch) error {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	start := db.ready.now()
	return db.wrote(start, retry(ctx, func() error { return db.send(ctx, build()) }))
}

// readBatch is sendBatch for a batch that only reads: its outcome is not
// recorded, and it carries no session settings (see session.go).
func (db *DB) readBatch(ctx context.Context, build func() *pgx.Batch) error {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	return retry(ctx, func() error { return db.pool.SendBatch(ctx, build()).Close() })
}

// ListSubscriptions returns at most f.Limit of the owner's subscriptions
// after f.After, by id.
func (db *DB) ListSubscriptions(ctx context.Context, f plantstore.SubscriptionFilter) ([]*plantstore.Subscription, error) {
	after := "" // sorts before every id
	if f.After != nil {
		after = *f.After
	}
	subs, err := queryAll(ctx, db, scanSubscription,
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions s WHERE s.owner = $1 AND s.id > $2 ORDER BY s.id LIMIT $3`,
		f.Owner, after, f.Limit)
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	return subs, nil
}

// FindSubscription returns the owner's subscription id.
func (db *DB) FindSubscription(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	s, err := queryOne(ctx, db, scanSubscription,
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions s WHERE s.owner = $1 AND s.id = $2`, owner, id)
	if err != nil {
		return nil, wrap("find webhook", err)
	}
	return s, nil
}

// qDeleteSubscription deletes an owner's subscription and, through it, its
// deliveries and attempts, in one statement; it returns the id deleted (no
// row: not the owner's).
const qDeleteSubscription = `WITH gone AS (
	DELETE FROM webhook_subscriptions WHERE owner = $1 AND id = $2 RETURNING id
), deliveries AS (
	DELETE FROM webhook_deliveries WHERE subscription_id IN (SELECT id FROM gone)
), attempts AS (
	DELETE FROM webhook_attempts WHERE subscription_id IN (SELECT id FROM gone)
)
SELECT id FROM gone`

// DeleteSubscription deletes the owner's subscription id with its
// deliveries and attempts.
func (db *DB) DeleteSubscription(ctx context.Context, owner, id string) error {
	_, err := writeOne(ctx, db, pgx.RowTo[string], qDeleteSubscription, owner, id)
	return wrap("delete webhook", err)
}

// RotateSecret makes secret the signing secret and keeps the old one until
// previousUntil.
func (db *DB) RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*plantstore.Subscription, error) {
	s, err := writeOne(ctx, db, scanSubscription, `UPDATE webhook_subscriptions s
	SET previous_secret = secret, previous_secret_until = $1, secret = $2
	WHERE owner = $3 AND id = $4 RETURNING `+subscriptionColumns,
		previousUntil, secret, owner, id)
	if err != nil {
		return nil, wrap("rotate webhook secret", err)
	}
	return s, nil
}

// ListAttempts returns at most f.Limit of the subscription's attempts
// after f.After, newest first, in state f.State when set, or
// plantstore.ErrNotFound when the subscription is not the owner's. The
// ownership check and the attempts share one round trip.
func (db *DB) ListAttempts(ctx context.Context, f plantstore.AttemptFilter) ([]*plantstore.Attempt, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var owned bool
	var attempts []*plantstore.Attempt
	var at *time.Time
	var msg string
	var n int
	if f.After != nil {
		at, msg, n = &f.After.AttemptedAt, f.After.MessageID, f.After.Attempt
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE owner = $1 AND id = $2)`, f.Owner, f.SubscriptionID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&owned) })
	b.Queue(`SELECT message_id, plant_id, attempt, attempted_at, COALESCE(status_code, 0), COALESCE(error, ''),
		duration_us * 1000, state, next_attempt_at, subscription_id, COALESCE(response_body, '')
		FROM webhook_attempts WHERE subscription_id = $1 AND ($2::TEXT = '' OR state = $2)
			AND ($3::TIMESTAMPTZ IS NULL OR (attempted_at, message_id, attempt) < ($3, $4::TEXT, $5::INT))
		ORDER BY attempted_at DESC, message_id DESC, attempt DESC LIMIT $6`,
		f.SubscriptionID, string(f.State), at, msg, n, f.Limit).
		Query(func(rows pgx.Rows) (err error) {
			attempts, err = pgx.CollectRows(rows, scanAttempt)
			return err
		})
	err := db.pool.SendBatch(ctx, b).Close()
	if err == nil && !owned {
		err = plantstore.ErrNotFound
	}
	if err != nil {
		return nil, wrap("list webhook attempts", err)
	}
	return attempts, nil
}

// scanAttempt scans an attempt whose duration comes in nanoseconds.
func scanAttempt(row pgx.CollectableRow) (*plantstore.Attempt, error) {
	var a plantstore.Attempt
	if err := row.Scan(&a.MessageID, &a.PlantID, &a.Attempt, &a.AttemptedAt, &a.StatusCode, &a.Error,
		&a.Duration, &a.State, &a.NextAttemptAt, &a.SubscriptionID, &a.ResponseBody); err != nil {
		return nil, err
	}
	return &a, nil
}

func scanSubscription(row pgx.CollectableRow) (*plantstore.Subscription, error) {
	var s plantstore.Subscription
	if err := row.Scan(subscriptionDest(&s)...); err != nil {
		return nil, err
	}
	if s.DisabledAt != nil && s.DisabledReason == "" {
		s.DisabledReason = plantstore.DisabledManual // stored as NULL
	}
	return &s, nil
}

// subscriptionDest is where subscriptionColumns scan to.
func subscriptionDest(s *plantstore.Subscription) []any {
	return []any{&s.ID, &s.Owner, &s.URL, &s.Description, &s.Secret, &s.PreviousSecret,
		&s.PreviousSecretUntil, &s.CreatedAt, &s.DisabledAt, &s.DisabledReason, &s.FailingSince, maskDest{&s.Types}}
}

// maskDest scans the event_mask column into a subscription's types
// (plantstore.EventMask.Types).
type maskDest struct{ p *[]string }

func (d maskDest) Scan(src any) error {
	m, ok := src.(int64)
	if !ok {
		return fmt.Errorf("postgres: webhook event mask: unexpected %T", src)
	}
	*d.p = plantstore.EventMask(m).Types()
	return nil
}
