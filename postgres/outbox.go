package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// qDue locks up to $2 due deliveries that no other claim holds: a
// concurrent claim skips them rather than waiting. (CockroachDB has SKIP
// LOCKED since 23.1.)
const qDue = `SELECT message_id, subscription_id, owner, plant_id, payload, attempts, created_at
FROM webhook_deliveries
WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
ORDER BY next_attempt_at LIMIT $2
FOR UPDATE SKIP LOCKED`

// Updates of the deliveries whose keys come as two arrays, of message ids
// and of subscription ids.
const (
	qLease = `UPDATE webhook_deliveries SET lease_until = $1
WHERE (message_id, subscription_id) IN (SELECT * FROM unnest($2::TEXT[], $3::TEXT[]))`
	qFail = `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
WHERE (message_id, subscription_id) IN (SELECT * FROM unnest($1::TEXT[], $2::TEXT[]))`
)

// deliveryKeys names deliveries for qLease and qFail.
type deliveryKeys struct{ messages, subscriptions []string }

func (k *deliveryKeys) add(t *plantstore.Task) {
	k.messages = append(k.messages, t.MessageID)
	k.subscriptions = append(k.subscriptions, t.SubscriptionID)
}

// ClaimDeliveries leases up to limit due deliveries until leaseUntil, the
// earliest next attempt first, in one transaction: the due rows are locked
// (FOR UPDATE SKIP LOCKED), their subscriptions read, and the lease set
// before COMMIT. Once committed, the lease keeps the rows out of every claim
// until it ends, so two replicas never hold the same delivery. A due
// delivery whose subscription is disabled or gone is marked failed and not
// returned.
func (db *DB) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*plantstore.Task, error) {
	if limit < 1 {
		return nil, nil
	}
	var claimed []*plantstore.Task
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		claimed = nil
		rows, _ := tx.Query(ctx, qDue, now, limit)
		due, err := pgx.CollectRows(rows, scanTask)
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]string, len(due))
		for i, t := range due {
			ids[i] = t.SubscriptionID
		}
		rows, _ = tx.Query(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE id = ANY($1)`, ids)
		subs, err := pgx.CollectRows(rows, scanSubscription)
		if err != nil {
			return err
		}
		byID := make(map[string]*plantstore.Subscription, len(subs))
		for _, s := range subs {
			byID[s.ID] = s
		}
		var lease, fail deliveryKeys
		for _, t := range due {
			if s := byID[t.SubscriptionID]; s != nil && s.DisabledAt == nil {
				t.Subscription = s
				claimed = append(claimed, t)
				lease.add(t)
			} else {
				fail.add(t)
			}
		}
		b := &pgx.Batch{}
		if len(lease.messages) > 0 {
			b.Queue(qLease, leaseUntil, lease.messages, lease.subscriptions)
		}
		if len(fail.messages) > 0 {
			b.Queue(qFail, fail.messages, fail.subscriptions)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, wrap("claim webhook deliveries", err)
	}
	return claimed, nil
}

func scanTask(row pgx.CollectableRow) (*plantstore.Task, error) {
	var t plantstore.Task
	if err := row.Scan(&t.MessageID, &t.SubscriptionID, &t.Owner, &t.PlantID, &t.Payload, &t.Attempts, &t.CreatedAt); err != nil {
		return nil, err
	}
	return &t, nil
}

// qComplete records an attempt of a pending delivery and sets the
// delivery's state, in one statement; a delivery no longer pending is left
// alone and gets no attempt row.
const qComplete = `WITH done AS (
	UPDATE webhook_deliveries SET attempts = attempts + 1, state = $3, next_attempt_at = $4, lease_until = NULL
	WHERE message_id = $1 AND subscription_id = $2 AND state = 'pending'
	RETURNING subscription_id, message_id, plant_id, attempts
)
INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at)
SELECT subscription_id, message_id, plant_id, attempts, $5::TIMESTAMPTZ, NULLIF($6::INT, 0), NULLIF($7::TEXT, ''), $8::BIGINT, $3::TEXT, $4::TIMESTAMPTZ
FROM done`

// CompleteDelivery records attempt r of t, sets the delivery's new state
// and releases its lease; with r.Disable it also disables the subscription
// as of r.AttemptedAt and fails its other pending deliveries. The
// statements travel pipelined in one transaction: the subscription row
// first, then deliveries, so completions that disable lock in the same
// order.
func (db *DB) CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		if r.Disable {
			b.Queue(`UPDATE webhook_subscriptions SET disabled_at = $1 WHERE id = $2 AND disabled_at IS NULL`,
				r.AttemptedAt, t.SubscriptionID)
		}
		b.Queue(qComplete, t.MessageID, t.SubscriptionID, string(r.State), r.NextAttemptAt,
			r.AttemptedAt, r.StatusCode, r.Error, r.Duration.Microseconds())
		if r.Disable {
			b.Queue(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
			WHERE subscription_id = $1 AND state = 'pending'`, t.SubscriptionID)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	return wrap("complete webhook delivery", err)
}

// OutboxStats returns how many deliveries are pending and when the oldest
// of them was created.
func (db *DB) OutboxStats(ctx context.Context) (int, time.Time, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var n int
	var oldest *time.Time
	err := db.pool.QueryRow(ctx, `SELECT COUNT(*), MIN(created_at) FROM webhook_deliveries WHERE state = 'pending'`).Scan(&n, &oldest)
	switch {
	case err != nil:
		return 0, time.Time{}, wrap("outbox stats", err)
	case oldest == nil:
		return n, time.Time{}, nil
	}
	return n, *oldest, nil
}
