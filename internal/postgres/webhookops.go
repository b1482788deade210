package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// qUpdateSubscription applies a merge patch ($3 url, $4 description, $5
// enabled, NULL keeps; $8 the event mask when $7) as of $6 and returns the row before (the CTE's
// snapshot) and after. A disable stores no reason (read back as manual); an
// enable clears the disabled state and the failing streak. The row lock of
// the UPDATE orders it with concurrent attempts' updates.
const qUpdateSubscription = `WITH old AS (
	SELECT ` + subscriptionColumns + ` FROM webhook_subscriptions s WHERE s.owner = $1 AND s.id = $2
), upd AS (
	UPDATE webhook_subscriptions s SET
		url = COALESCE($3::TEXT, s.url),
		description = COALESCE($4::TEXT, s.description),
		disabled_at = CASE WHEN $5::BOOL IS NULL THEN s.disabled_at WHEN $5 THEN NULL ELSE COALESCE(s.disabled_at, $6::TIMESTAMPTZ) END,
		disabled_reason = CASE WHEN $5 IS NULL OR NOT $5 AND s.disabled_at IS NOT NULL THEN s.disabled_reason ELSE NULL END,
		failing_since = CASE WHEN $5 THEN NULL ELSE s.failing_since END,
		event_mask = CASE WHEN $7::BOOL THEN $8::BIGINT ELSE s.event_mask END
	WHERE s.owner = $1 AND s.id = $2
	RETURNING ` + subscriptionColumns + `
)
SELECT old.*, upd.* FROM old, upd`

// qFailPending fails a disabled subscription's pending deliveries.
const qFailPending = `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
WHERE subscription_id = $1 AND state = 'pending'
	AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND disabled_at IS NOT NULL)`

// qClearRecovered makes a re-enabled subscription's deliveries recoverable
// again.
const qClearRecovered = `UPDATE webhook_deliveries SET recovered_at = NULL WHERE subscription_id = $1 AND recovered_at IS NOT NULL`

// UpdateSubscription applies u as of now and returns the subscription
// before and after; a disable fails the pending deliveries, an enable makes
// them all recoverable again.
func (db *DB) UpdateSubscription(ctx context.Context, owner, id string, u plantstore.SubscriptionUpdate, now time.Time) (before, after *plantstore.Subscription, err error) {
	var mask int64
	if u.Types != nil {
		mask = int64(plantstore.Mask(*u.Types))
	}
	err = db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		var b, a plantstore.Subscription
		if err := tx.QueryRow(ctx, qUpdateSubscription, owner, id, u.URL, u.Description, u.Enabled, now, u.Types != nil, mask).
			Scan(append(subscriptionDest(&b), subscriptionDest(&a)...)...); err != nil {
			return err
		}
		for _, s := range []*plantstore.Subscription{&b, &a} {
			if s.DisabledAt != nil && s.DisabledReason == "" {
				s.DisabledReason = plantstore.DisabledManual
			}
		}
		if b.DisabledAt == nil && a.DisabledAt != nil {
			if _, err := tx.Exec(ctx, qFailPending, id); err != nil {
				return err
			}
		}
		if b.DisabledAt != nil && a.DisabledAt == nil { // a re-enable is a fresh start for recover too
			if _, err := tx.Exec(ctx, qClearRecovered, id); err != nil {
				return err
			}
		}
		before, after = &b, &a
		return nil
	})
	if err != nil {
		return nil, nil, wrap("update webhook", notFoundIfNoRows(err))
	}
	return before, after, nil
}

// ResendDelivery makes the subscription's delivery pending and due at now,
// and recoverable again.
func (db *DB) ResendDelivery(ctx context.Context, owner, id, messageID string, now time.Time) (*plantstore.Delivery, error) {
	d, err := writeOne(ctx, db, scanDelivery, `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $1, recovered_at = NULL
	WHERE message_id = $2 AND subscription_id = $3 AND owner = $4
	RETURNING message_id, subscription_id, plant_id, state, attempts, created_at, next_attempt_at`,
		now, messageID, id, owner)
	if err != nil {
		return nil, wrap("resend webhook delivery", err)
	}
	return d, nil
}

// qRecover re-queues at most $5 failed deliveries of an owner's
// subscription created at or after $3 that no recover re-queued yet,
// marking them (recovered_at $4); it returns whether the subscription is
// the owner's and how many.
const qRecover = `WITH sub AS (
	SELECT id FROM webhook_subscriptions WHERE owner = $1 AND id = $2
), picked AS (
	SELECT message_id FROM webhook_deliveries
	WHERE subscription_id IN (SELECT id FROM sub) AND state = 'failed' AND created_at >= $3
		AND recovered_at IS NULL
	ORDER BY created_at LIMIT $5
	FOR UPDATE
), upd AS (
	UPDATE webhook_deliveries d SET state = 'pending', next_attempt_at = $4, lease_until = NULL, recovered_at = $4
	FROM picked WHERE d.subscription_id = $2 AND d.message_id = picked.message_id AND d.state = 'failed'
	RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM sub), (SELECT COUNT(*) FROM upd)`

// RecoverDeliveries makes at most limit failed deliveries created at or
// after since that no recover re-queued yet pending and due at now, and
// marks them recovered (recovered_at).
func (db *DB) RecoverDeliveries(ctx context.Context, owner, id string, since, now time.Time, limit int) (int, error) {
	var owned bool
	var n int
	_, err := writeOne(ctx, db, func(row pgx.CollectableRow) (struct{}, error) {
		return struct{}{}, row.Scan(&owned, &n)
	}, qRecover, owner, id, since, now, limit)
	if err == nil && !owned {
		err = plantstore.ErrNotFound
	}
	if err != nil {
		return 0, wrap("recover webhook deliveries", err)
	}
	return n, nil
}

func scanDelivery(row pgx.CollectableRow) (*plantstore.Delivery, error) {
	var d plantstore.Delivery
	if err := row.Scan(&d.MessageID, &d.SubscriptionID, &d.PlantID, &d.State, &d.Attempts, &d.CreatedAt, &d.NextAttemptAt); err != nil {
		return nil, err
	}
	return &d, nil
}

// notFoundIfNoRows maps pgx.ErrNoRows to plantstore.ErrNotFound.
func notFoundIfNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return plantstore.ErrNotFound
	}
	return err
}
