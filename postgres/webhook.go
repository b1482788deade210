package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// subscriptionColumns is a subscription's select list; a missing previous
// secret (NULL) reads as "".
const subscriptionColumns = `id, owner, url, description, secret, COALESCE(previous_secret, ''), previous_secret_until, created_at, disabled_at`

// InsertSubscription stores s, or returns plantstore.ErrExists when its id
// is taken.
func (db *DB) InsertSubscription(ctx context.Context, s *plantstore.Subscription) error {
	_, err := db.exec(ctx, `INSERT INTO webhook_subscriptions
	(id, owner, url, description, secret, previous_secret, previous_secret_until, created_at, disabled_at)
	VALUES ($1, $2, $3, $4, $5, NULLIF($6::TEXT, ''), $7, $8, $9)`,
		s.ID, s.Owner, s.URL, s.Description, s.Secret, s.PreviousSecret, s.PreviousSecretUntil, s.CreatedAt, s.DisabledAt)
	return wrap("insert webhook", existsIfDuplicate(err))
}

// ListSubscriptions returns the owner's subscriptions, oldest first.
func (db *DB) ListSubscriptions(ctx context.Context, owner string) ([]*plantstore.Subscription, error) {
	subs, err := queryAll(ctx, db, scanSubscription,
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = $1 ORDER BY created_at, id`, owner)
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	return subs, nil
}

// FindSubscription returns the owner's subscription id.
func (db *DB) FindSubscription(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	s, err := queryOne(ctx, db, scanSubscription,
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = $1 AND id = $2`, owner, id)
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
	_, err := queryOne(ctx, db, pgx.RowTo[string], qDeleteSubscription, owner, id)
	return wrap("delete webhook", err)
}

// RotateSecret makes secret the signing secret and keeps the old one until
// previousUntil.
func (db *DB) RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*plantstore.Subscription, error) {
	s, err := queryOne(ctx, db, scanSubscription, `UPDATE webhook_subscriptions
	SET previous_secret = secret, previous_secret_until = $1, secret = $2
	WHERE owner = $3 AND id = $4 RETURNING `+subscriptionColumns,
		previousUntil, secret, owner, id)
	if err != nil {
		return nil, wrap("rotate webhook secret", err)
	}
	return s, nil
}

// ListAttempts returns the subscription's latest attempts, newest first, at
// most limit, or plantstore.ErrNotFound when the subscription is not the
// owner's. The ownership check and the attempts share one round trip.
func (db *DB) ListAttempts(ctx context.Context, owner, id string, limit int) ([]*plantstore.Attempt, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var owned bool
	var attempts []*plantstore.Attempt
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE owner = $1 AND id = $2)`, owner, id).
		QueryRow(func(row pgx.Row) error { return row.Scan(&owned) })
	b.Queue(`SELECT message_id, plant_id, attempt, attempted_at, COALESCE(status_code, 0), COALESCE(error, ''),
		duration_us * 1000, state, next_attempt_at, subscription_id
		FROM webhook_attempts WHERE subscription_id = $1 ORDER BY attempted_at DESC, attempt DESC LIMIT $2`, id, limit).
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
		&a.Duration, &a.State, &a.NextAttemptAt, &a.SubscriptionID); err != nil {
		return nil, err
	}
	return &a, nil
}

func scanSubscription(row pgx.CollectableRow) (*plantstore.Subscription, error) {
	var s plantstore.Subscription
	if err := row.Scan(&s.ID, &s.Owner, &s.URL, &s.Description, &s.Secret, &s.PreviousSecret,
		&s.PreviousSecretUntil, &s.CreatedAt, &s.DisabledAt); err != nil {
		return nil, err
	}
	return &s, nil
}
