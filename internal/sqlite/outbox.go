package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

// clock is the database's clock, which times leases and says what is due:
// SQLite runs in this process, so it is the process's (a database file is
// served by one process at a time).
var clock = time.Now

// qInFlight counts the leased deliveries of each subscription.
const qInFlight = `SELECT subscription_id, owner, COUNT(*) FROM webhook_deliveries
WHERE state = 'pending' AND lease_until > ?1 GROUP BY subscription_id, owner`

// qDue returns the earliest due, unleased deliveries of each subscription,
// at most ?2 of each, with whether the subscription is live (there and
// enabled). subs walks the subscriptions that have pending deliveries on
// webhook_deliveries_pending, one index probe each (a loose index scan),
// which also gives each one's earliest next attempt, so only those with a
// delivery due are probed again. A subscription with thousands of due
// deliveries costs a claim no more than one with one, and cannot hide
// another's; the cost grows with the number of subscriptions that have
// pending deliveries. The ORDER BY names both columns so that only that
// partial index serves it (the subscription_id index would walk the
// finished deliveries too).
const qDue = `WITH RECURSIVE subs(id, head) AS (
	SELECT subscription_id, next_attempt_at FROM webhook_deliveries WHERE rowid = (
		SELECT rowid FROM webhook_deliveries WHERE state = 'pending' ORDER BY subscription_id, next_attempt_at LIMIT 1)
	UNION ALL
	SELECT d.subscription_id, d.next_attempt_at FROM subs JOIN webhook_deliveries d ON d.rowid = (
		SELECT rowid FROM webhook_deliveries WHERE state = 'pending' AND subscription_id > subs.id
		ORDER BY subscription_id, next_attempt_at LIMIT 1)
)
SELECT d.message_id, d.subscription_id, d.owner, d.next_attempt_at, s.id IS NOT NULL AND s.disabled_at IS NULL
FROM subs JOIN webhook_deliveries d ON d.rowid IN (
	SELECT rowid FROM webhook_deliveries
	WHERE subscription_id = subs.id AND state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1)
	ORDER BY next_attempt_at LIMIT ?2)
LEFT JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE subs.head <= ?1`

// qLease leases a delivery that is still pending, due, unleased and of a
// live subscription.
const qLease = `UPDATE webhook_deliveries SET lease_until = ?1
WHERE message_id = ?2 AND subscription_id = ?3 AND state = 'pending' AND next_attempt_at <= ?4 AND (lease_until IS NULL OR lease_until <= ?4)
	AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = ?3 AND disabled_at IS NULL)
RETURNING message_id, subscription_id, owner, plant_id, event_type, seq, name, tag, typed, stored_body, attempts, created_at,
	plant_created_at, plant_updated_at`

// qFailDead fails the pending deliveries of a subscription that is gone or
// disabled.
const qFailDead = `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
WHERE subscription_id = ?1 AND state = 'pending'
	AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = ?1 AND disabled_at IS NULL)`

// ClaimDeliveries leases the picked deliveries that are still pending, due
// and unleased, of a live subscription, and fails the pending deliveries of
// the dead subscriptions, in one write of the group commit.
func (db *DB) ClaimDeliveries(ctx context.Context, picked []plantstore.DueDelivery, dead []string, lease time.Duration) ([]*plantstore.Task, error) {
	var tasks []*plantstore.Task
	err := db.update(ctx, "lease webhook deliveries", func(ctx context.Context, tx *Tx) error {
		tasks = nil
		for _, id := range dead {
			if _, err := tx.ExecContext(ctx, qFailDead, id); err != nil {
				return wrap("fail webhook deliveries", err)
			}
		}
		now := clock()
		subs := map[string]*plantstore.Subscription{}
		for _, d := range picked {
			t, err := scanLeased(tx.QueryRowContext(ctx, qLease, now.Add(lease).UnixNano(), d.MessageID, d.SubscriptionID, now.UnixNano()))
			if errors.Is(err, sql.ErrNoRows) {
				continue // claimed, completed or disabled since it was read
			} else if err != nil {
				return wrap("lease webhook delivery", err)
			}
			if t.Subscription = subs[t.SubscriptionID]; t.Subscription == nil {
				row := tx.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE id = ?`, t.SubscriptionID)
				if t.Subscription, err = scanSubscription(row); err != nil {
					return wrap("lease webhook delivery", err)
				}
				subs[t.SubscriptionID] = t.Subscription
			}
			tasks = append(tasks, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// DueDeliveries reads, on the read pool (a poll that finds nothing due
// takes no write lock), the earliest due deliveries of each subscription
// (at most perSub each), with whether it is live, and the deliveries
// leased now.
func (db *DB) DueDeliveries(ctx context.Context, perSub int) (due []plantstore.DueDelivery, leased []plantstore.InFlight, err error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	now := clock()
	st, err := db.readStmt(ctx, qDue)
	if err != nil {
		return nil, nil, wrap("read due webhook deliveries", err)
	}
	rows, err := st.QueryContext(ctx, now.UnixNano(), perSub)
	if err != nil {
		return nil, nil, wrap("read due webhook deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d plantstore.DueDelivery
		var next int64
		if err := rows.Scan(&d.MessageID, &d.SubscriptionID, &d.Owner, &next, &d.Live); err != nil {
			return nil, nil, wrap("read due webhook deliveries", err)
		}
		d.NextAttemptAt = fromNanos(next)
		due = append(due, d)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, wrap("read due webhook deliveries", err)
	}
	if len(due) == 0 {
		return nil, nil, nil
	}
	st, err = db.readStmt(ctx, qInFlight)
	if err != nil {
		return nil, nil, wrap("read due webhook deliveries", err)
	}
	rows, err = st.QueryContext(ctx, now.UnixNano())
	if err != nil {
		return nil, nil, wrap("read due webhook deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f plantstore.InFlight
		if err := rows.Scan(&f.SubscriptionID, &f.Owner, &f.N); err != nil {
			return nil, nil, wrap("read due webhook deliveries", err)
		}
		leased = append(leased, f)
	}
	return due, leased, wrap("read due webhook deliveries", rows.Err())
}

// scanLeased scans a row of qLease: a delivery and the facts of its event.
func scanLeased(s scanner) (*plantstore.Task, error) {
	t := &plantstore.Task{}
	var (
		created    int64
		seq        sql.NullInt64
		tag        sql.NullString
		typed      bool
		storedBody []byte

		plantCreated, plantUpdated sql.NullInt64
	)
	e := &t.Event
	if err := s.Scan(&t.MessageID, &t.SubscriptionID, &t.Owner, &e.PlantID, &e.Type, &seq, &e.Name, &tag, &typed, &storedBody,
		&t.Attempts, &created, &plantCreated, &plantUpdated); err != nil {
		return nil, err
	}
	t.CreatedAt = fromNanos(created)
	e.Owner, e.ID, e.Seq, e.CreatedAt = t.Owner, plantstore.EventIDOf(t.MessageID), seq.Int64, t.CreatedAt
	setPlantTimes(e, plantCreated, plantUpdated)
	if tag.Valid {
		e.Tag = &tag.String
	}
	if typed {
		t.Body = plantstore.BodyEvent
	}
	if len(storedBody) > 0 {
		t.StoredBody = storedBody
	}
	return t, nil
}

// CompleteDelivery records an attempt of t, sets the delivery's new state
// and releases its lease; it keeps the subscription's FailingSince, and
// disables the subscription (as of r.AttemptedAt) on a 410 or when it has
// failed since before r.FailingCutoff, failing its other pending
// deliveries. A delivery no longer pending is left alone.
func (db *DB) CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	return db.update(ctx, "complete webhook delivery", func(ctx context.Context, tx *Tx) error {
		next := nullNanos(r.NextAttemptAt)
		var attempt int
		var plantID int64
		err := tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?, next_attempt_at = ?, lease_until = NULL
			WHERE message_id = ? AND subscription_id = ? AND state = 'pending' RETURNING attempts, plant_id`,
			string(r.State), next, t.MessageID, t.SubscriptionID).Scan(&attempt, &plantID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return wrap("complete webhook delivery", err)
		}
		code := sql.NullInt64{Int64: int64(r.StatusCode), Valid: r.StatusCode != 0}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at, response_body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.SubscriptionID, t.MessageID, plantID, attempt, r.AttemptedAt.UnixNano(), code, nullEmpty(r.Error),
			r.Duration.Microseconds(), string(r.State), next, nullEmpty(r.ResponseBody)); err != nil {
			return wrap("insert webhook attempt", err)
		}
		if r.State == plantstore.DeliverySucceeded {
			_, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL`, t.SubscriptionID)
			return wrap("complete webhook delivery", err)
		}
		var owner string
		var failingSince int64
		err = tx.QueryRowContext(ctx, `UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, ?) WHERE id = ?
			RETURNING owner, failing_since`, r.AttemptedAt.UnixNano(), t.SubscriptionID).Scan(&owner, &failingSince)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // gone
		} else if err != nil {
			return wrap("complete webhook delivery", err)
		}
		var reason plantstore.DisabledReason
		switch {
		case r.Disable:
			reason = plantstore.DisabledGone
		case !r.FailingCutoff.IsZero() && failingSince < r.FailingCutoff.UnixNano():
			reason = plantstore.DisabledFailing
		default:
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL`,
			r.AttemptedAt.UnixNano(), string(reason), t.SubscriptionID)
		if err != nil {
			return wrap("disable webhook", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			db.subs.add(owner, -1)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
			WHERE subscription_id = ? AND state = 'pending'`, t.SubscriptionID); err != nil {
			return wrap("disable webhook", err)
		}
		return nil
	})
}

// PruneOutbox deletes at most limit rows: attempts made before before,
// then finished deliveries created before it. It is one write of the group
// commit, so it holds the write lock for one batch of at most limit rows.
func (db *DB) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := db.update(ctx, "prune webhook history", func(ctx context.Context, tx *Tx) error {
		n = 0
		for _, q := range []string{
			`DELETE FROM webhook_attempts WHERE rowid IN (SELECT rowid FROM webhook_attempts WHERE attempted_at < ?1 LIMIT ?2)`,
			`DELETE FROM webhook_deliveries WHERE rowid IN (SELECT rowid FROM webhook_deliveries WHERE state <> 'pending' AND created_at < ?1 LIMIT ?2)`,
		} {
			if n == limit {
				break
			}
			res, err := tx.ExecContext(ctx, q, before.UnixNano(), limit-n)
			if err != nil {
				return wrap("prune webhook history", err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return wrap("prune webhook history", err)
			}
			n += int(k)
		}
		return nil
	})
	return n, err
}

// OutboxStats returns how many deliveries are pending and when the oldest
// of them was created.
func (db *DB) OutboxStats(ctx context.Context) (int, time.Time, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT COUNT(*), MIN(created_at) FROM webhook_deliveries WHERE state = 'pending'`)
	if err != nil {
		return 0, time.Time{}, wrap("outbox stats", err)
	}
	var n int
	var oldest sql.NullInt64
	if err := st.QueryRowContext(ctx).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, wrap("outbox stats", err)
	}
	if !oldest.Valid {
		return n, time.Time{}, nil
	}
	return n, fromNanos(oldest.Int64), nil
}

// qCountLeased counts the leased deliveries of an owner, and of one of its
// subscriptions, on webhook_deliveries_leased: at most the deliveries in
// flight over every dispatcher.
const qCountLeased = `SELECT COUNT(CASE WHEN subscription_id = ?2 THEN 1 END), COUNT(*) FROM webhook_deliveries
WHERE state = 'pending' AND lease_until IS NOT NULL AND lease_until > ?3 AND owner = ?1`

// CountLeased counts the deliveries leased now to the owner's subscription
// and to all the owner's subscriptions.
func (db *DB) CountLeased(ctx context.Context, owner, subscriptionID string) (int, int, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, qCountLeased)
	if err != nil {
		return 0, 0, wrap("count leased deliveries", err)
	}
	var sub, total int
	if err := st.QueryRowContext(ctx, owner, subscriptionID, clock().UnixNano()).Scan(&sub, &total); err != nil {
		return 0, 0, wrap("count leased deliveries", err)
	}
	return sub, total, nil
}
