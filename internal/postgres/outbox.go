package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// Every time a claim compares with, or a lease is set from, is the
// server's now(): replicas whose clocks differ agree on when a lease ends.

// qInFlight counts the leased deliveries of each subscription.
const qInFlight = `SELECT subscription_id, owner, COUNT(*)::INT FROM webhook_deliveries
WHERE state = 'pending' AND lease_until > now() GROUP BY subscription_id, owner`

// qDue returns the earliest due, unleased deliveries of each subscription,
// at most $1 of each, with whether the subscription is live (there and
// enabled). subs walks the subscriptions that have pending deliveries on
// webhook_deliveries_pending, one index probe each (a loose index scan:
// PostgreSQL has no skip scan before 18), which also gives each one's
// earliest next attempt, so only those with a delivery due are probed
// again. A subscription with thousands of due deliveries costs a claim no
// more than one with one, and cannot hide another's; the cost grows with
// the number of subscriptions that have pending deliveries. The ORDER BY
// names both columns so that only that partial index serves it (the
// subscription_id index would walk the finished deliveries too).
const qDue = `WITH RECURSIVE subs AS (
	(SELECT subscription_id AS id, next_attempt_at AS head FROM webhook_deliveries WHERE state = 'pending'
		ORDER BY subscription_id, next_attempt_at LIMIT 1)
	UNION ALL
	SELECT n.id, n.head FROM subs, LATERAL (
		SELECT d.subscription_id AS id, d.next_attempt_at AS head FROM webhook_deliveries d
		WHERE d.state = 'pending' AND d.subscription_id > subs.id
		ORDER BY d.subscription_id, d.next_attempt_at LIMIT 1) n
)
SELECT d.message_id, d.subscription_id, d.owner, d.next_attempt_at, s.id IS NOT NULL AND s.disabled_at IS NULL
FROM subs CROSS JOIN LATERAL (
	SELECT message_id, subscription_id, owner, next_attempt_at FROM webhook_deliveries
	WHERE subscription_id = subs.id AND state = 'pending' AND next_attempt_at <= now()
		AND (lease_until IS NULL OR lease_until <= now())
	ORDER BY next_attempt_at LIMIT $1
) d
LEFT JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE subs.head <= now()`

// qLease leases the deliveries named by two arrays (message ids,
// subscription ids) that are still pending and unleased, of a live
// subscription, still due, until now() plus $3 microseconds, and returns them with
// their subscriptions. A row another claim holds locked is skipped, not
// waited for: that claim is leasing it.
const qLease = `WITH picked AS (
	SELECT d.message_id, d.subscription_id FROM webhook_deliveries d
	JOIN unnest($1::TEXT[], $2::TEXT[]) AS k(message_id, subscription_id)
		ON d.message_id = k.message_id AND d.subscription_id = k.subscription_id
	WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until <= now())
	FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d SET lease_until = now() + $3::BIGINT * INTERVAL '1 microsecond'
FROM picked, webhook_subscriptions s
WHERE d.message_id = picked.message_id AND d.subscription_id = picked.subscription_id
	AND s.id = d.subscription_id AND s.disabled_at IS NULL
RETURNING d.message_id, d.subscription_id, d.owner, d.plant_id, d.event_type, COALESCE(d.seq, 0), d.name, d.tag, d.typed = 1, d.stored_body,
	d.attempts, d.created_at, d.plant_created_at, d.plant_updated_at, ` + subscriptionColumns

// qFailDead fails the pending deliveries of the subscriptions in $1 that
// are gone or disabled.
const qFailDead = `UPDATE webhook_deliveries d SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
WHERE d.subscription_id = ANY($1::TEXT[]) AND d.state = 'pending'
	AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.subscription_id AND s.disabled_at IS NULL)`

// DueDeliveries reads the due deliveries of each subscription, with
// whether it is live, and the deliveries leased now, in one round trip
// (one implicit transaction). Claims racing each other read the same
// earliest deliveries of a subscription, so one leases them and the others
// skip them (qLease): the bounds hold across replicas.
func (db *DB) DueDeliveries(ctx context.Context, perSub int) (due []plantstore.DueDelivery, leased []plantstore.InFlight, err error) {
	err = db.readBatch(ctx, func() *pgx.Batch {
		due, leased = nil, nil
		b := &pgx.Batch{}
		b.Queue(qDue, perSub).Query(func(rows pgx.Rows) (err error) {
			due, err = pgx.CollectRows(rows, pgx.RowToStructByPos[plantstore.DueDelivery])
			return err
		})
		b.Queue(qInFlight).Query(func(rows pgx.Rows) (err error) {
			leased, err = pgx.CollectRows(rows, pgx.RowToStructByPos[plantstore.InFlight])
			return err
		})
		return b
	})
	if err != nil {
		return nil, nil, wrap("read due webhook deliveries", err)
	}
	return due, leased, nil
}

// ClaimDeliveries leases the picked deliveries (each checked again: still
// pending and unleased, not locked by another claim) and fails those of
// dead subscriptions, in one round trip (one implicit transaction). Once
// committed, the lease keeps a delivery out of every claim until it ends,
// so two replicas never hold the same delivery.
func (db *DB) ClaimDeliveries(ctx context.Context, picked []plantstore.DueDelivery, dead []string, lease time.Duration) ([]*plantstore.Task, error) {
	var keys deliveryKeys
	for _, d := range picked {
		keys.messages = append(keys.messages, d.MessageID)
		keys.subscriptions = append(keys.subscriptions, d.SubscriptionID)
	}
	var tasks []*plantstore.Task
	err := db.sendBatch(ctx, func() *pgx.Batch {
		tasks = nil
		b := &pgx.Batch{}
		if len(dead) > 0 {
			b.Queue(qFailDead, dead)
		}
		if len(picked) > 0 {
			b.Queue(qLease, keys.messages, keys.subscriptions, lease.Microseconds()).Query(func(rows pgx.Rows) (err error) {
				tasks, err = pgx.CollectRows(rows, scanLeased)
				return err
			})
		}
		return b
	})
	if err != nil {
		return nil, wrap("lease webhook deliveries", err)
	}
	return tasks, nil
}

// deliveryKeys names deliveries for qLease.
type deliveryKeys struct{ messages, subscriptions []string }

// scanLeased scans a row of qLease: a delivery, the facts of its event, and
// its subscription.
func scanLeased(row pgx.CollectableRow) (*plantstore.Task, error) {
	t := &plantstore.Task{Subscription: &plantstore.Subscription{}}
	e := &t.Event
	var typed bool
	var plantCreated, plantUpdated *time.Time
	dest := append([]any{&t.MessageID, &t.SubscriptionID, &t.Owner, &e.PlantID, &e.Type, &e.Seq, &e.Name, &e.Tag, &typed, &t.StoredBody,
		&t.Attempts, &t.CreatedAt, &plantCreated, &plantUpdated}, subscriptionDest(t.Subscription)...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	e.Owner, e.ID, e.CreatedAt = t.Owner, plantstore.EventIDOf(t.MessageID), t.CreatedAt
	setPlantTimes(e, plantCreated, plantUpdated)
	if typed {
		t.Body = plantstore.BodyEvent
	}
	return t, nil
}

// Statements of CompleteDelivery, sent as one implicit transaction.
const (
	// qLockForAttempt locks the subscription row first when the attempt
	// will change it ($2: the attempt failed; or it is failing and will be
	// cleared), so that every writer of a subscription and its deliveries
	// (this, DeleteSubscription) locks the subscription first.
	qLockForAttempt = `SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND ($2::BOOL OR failing_since IS NOT NULL) FOR UPDATE`
	// qComplete records an attempt of a pending delivery, sets the
	// delivery's state, and updates the subscription: FailingSince set by
	// a failed attempt ($9 false) unless set, cleared by a successful one;
	// disabled as of the attempt on a 410 ($10) or when it has failed since
	// before the cutoff ($11). A delivery no longer pending is left alone,
	// and so is its subscription.
	qComplete = `WITH done AS (
	UPDATE webhook_deliveries SET attempts = attempts + 1, state = $3, next_attempt_at = $4, lease_until = NULL
	WHERE message_id = $1 AND subscription_id = $2 AND state = 'pending'
	RETURNING subscription_id, message_id, plant_id, attempts
), attempt AS (
	INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at, response_body)
	SELECT subscription_id, message_id, plant_id, attempts, $5::TIMESTAMPTZ, NULLIF($6::INT, 0), NULLIF($7::TEXT, ''), $8::BIGINT, $3::TEXT, $4::TIMESTAMPTZ,
		NULLIF($12::TEXT, '')
	FROM done
)
UPDATE webhook_subscriptions SET
	failing_since = CASE WHEN $9::BOOL THEN NULL ELSE COALESCE(failing_since, $5) END,
	disabled_reason = CASE WHEN disabled_at IS NOT NULL THEN disabled_reason
		WHEN $10::BOOL THEN 'gone'
		WHEN NOT $9 AND COALESCE(failing_since, $5) < $11::TIMESTAMPTZ THEN 'failing' END,
	disabled_at = CASE WHEN disabled_at IS NOT NULL THEN disabled_at
		WHEN $10 OR (NOT $9 AND COALESCE(failing_since, $5) < $11) THEN $5 END
WHERE id = $2 AND EXISTS (SELECT 1 FROM done) AND (NOT $9 OR failing_since IS NOT NULL)`
	// qFailDisabled fails the pending deliveries of a subscription once it
	// is disabled.
	qFailDisabled = `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
WHERE subscription_id = $1 AND state = 'pending'
	AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND disabled_at IS NOT NULL)`
)

// CompleteDelivery records attempt r of t, sets the delivery's new state,
// releases its lease and keeps the subscription's FailingSince; on a 410,
// or when the subscription has failed since before r.FailingCutoff, it
// disables the subscription as of r.AttemptedAt and fails its other
// pending deliveries. One round trip.
func (db *DB) CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	ok := r.State == plantstore.DeliverySucceeded
	var cutoff *time.Time
	if !r.FailingCutoff.IsZero() {
		cutoff = &r.FailingCutoff
	}
	err := db.sendBatch(ctx, func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(qLockForAttempt, t.SubscriptionID, !ok)
		b.Queue(qComplete, t.MessageID, t.SubscriptionID, string(r.State), r.NextAttemptAt,
			r.AttemptedAt, r.StatusCode, r.Error, r.Duration.Microseconds(), ok, r.Disable, cutoff, r.ResponseBody)
		if !ok {
			b.Queue(qFailDisabled, t.SubscriptionID)
		}
		return b
	})
	return wrap("complete webhook delivery", err)
}

// Statements of PruneOutbox: each deletes at most $2 rows older than $1,
// by key (CockroachDB has no ctid).
const (
	qPruneAttempts = `DELETE FROM webhook_attempts WHERE (subscription_id, message_id, attempt) IN (
	SELECT subscription_id, message_id, attempt FROM webhook_attempts WHERE attempted_at < $1 LIMIT $2)`
	qPruneDeliveries = `DELETE FROM webhook_deliveries WHERE (message_id, subscription_id) IN (
	SELECT message_id, subscription_id FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1 LIMIT $2)`
)

// PruneOutbox deletes at most limit rows: attempts made before before,
// then, while fewer than limit went, finished deliveries created before it.
func (db *DB) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	for _, q := range []string{qPruneAttempts, qPruneDeliveries} {
		if n == limit {
			break
		}
		tag, err := db.exec(ctx, q, before, limit-n)
		if err != nil {
			return n, wrap("prune webhook history", err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
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

// CountLeased counts the deliveries leased now (by the server's clock, as
// claims count them) to the owner's subscription and to all the owner's
// subscriptions, on webhook_deliveries_leased: at most the deliveries in
// flight over every dispatcher.
func (db *DB) CountLeased(ctx context.Context, owner, subscriptionID string) (int, int, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var sub, total int
	err := db.pool.QueryRow(ctx, `SELECT COUNT(*) FILTER (WHERE subscription_id = $2)::INT, COUNT(*)::INT FROM webhook_deliveries
WHERE state = 'pending' AND lease_until IS NOT NULL AND lease_until > now() AND owner = $1`, owner, subscriptionID).Scan(&sub, &total)
	if err != nil {
		return 0, 0, wrap("count leased deliveries", err)
	}
	return sub, total, nil
}
