package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

// qClaim selects the due deliveries with their subscription (NULL columns
// when it is gone).
const qClaim = `SELECT d.message_id, d.subscription_id, d.owner, d.plant_id, d.payload, d.attempts, d.created_at,
	s.url, s.description, s.secret, s.previous_secret, s.previous_secret_until, s.created_at, s.disabled_at
FROM webhook_deliveries d LEFT JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.state = 'pending' AND d.next_attempt_at <= ?1 AND (d.lease_until IS NULL OR d.lease_until <= ?1)
ORDER BY d.next_attempt_at LIMIT ?2`

// ClaimDeliveries leases up to limit due deliveries until leaseUntil,
// oldest next attempt first. SQLite has one writer, so the select and the
// lease update, in one write transaction, cannot race with another claim.
// A due delivery whose subscription is disabled or gone is marked failed
// and not returned.
func (db *DB) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*plantstore.Task, error) {
	// Most polls find nothing due: ask the read pool first, so that an idle
	// dispatcher does not take the write lock (and a place in the group
	// commit) twice a second. A delivery that falls due right after is
	// claimed at the next poll.
	if due, err := db.anyDue(ctx, now); err != nil || !due {
		return nil, err
	}
	var tasks []*plantstore.Task
	err := db.update(ctx, "claim webhook deliveries", func(ctx context.Context, tx *Tx) error {
		tasks = nil
		rows, err := tx.QueryContext(ctx, qClaim, now.UnixNano(), limit)
		if err != nil {
			return wrap("claim webhook deliveries", err)
		}
		var dead []*plantstore.Task
		for rows.Next() {
			t, live, err := scanClaim(rows)
			if err != nil {
				rows.Close()
				return wrap("claim webhook deliveries", err)
			}
			if live {
				tasks = append(tasks, t)
			} else {
				dead = append(dead, t)
			}
		}
		if err := errors.Join(rows.Close(), rows.Err()); err != nil {
			return wrap("claim webhook deliveries", err)
		}
		for _, t := range dead {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
				WHERE message_id = ? AND subscription_id = ?`, t.MessageID, t.SubscriptionID); err != nil {
				return wrap("fail webhook delivery", err)
			}
		}
		for _, t := range tasks {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = ? WHERE message_id = ? AND subscription_id = ?`,
				leaseUntil.UnixNano(), t.MessageID, t.SubscriptionID); err != nil {
				return wrap("lease webhook delivery", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// anyDue reports whether a delivery is due at now, on the read pool.
func (db *DB) anyDue(ctx context.Context, now time.Time) (bool, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
		WHERE state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1))`)
	if err != nil {
		return false, wrap("claim webhook deliveries", err)
	}
	var due bool
	if err := st.QueryRowContext(ctx, now.UnixNano()).Scan(&due); err != nil {
		return false, wrap("claim webhook deliveries", err)
	}
	return due, nil
}

// scanClaim scans a row of qClaim; live is false when the subscription is
// gone or disabled.
func scanClaim(s scanner) (t *plantstore.Task, live bool, err error) {
	t = &plantstore.Task{}
	var created int64
	var url, description, secret, prev sql.NullString
	var prevUntil, subCreated, disabled sql.NullInt64
	if err := s.Scan(&t.MessageID, &t.SubscriptionID, &t.Owner, &t.PlantID, &t.Payload, &t.Attempts, &created,
		&url, &description, &secret, &prev, &prevUntil, &subCreated, &disabled); err != nil {
		return nil, false, err
	}
	t.CreatedAt = fromNanos(created)
	if !url.Valid || disabled.Valid {
		return t, false, nil
	}
	t.Subscription = &plantstore.Subscription{
		ID: t.SubscriptionID, Owner: t.Owner, URL: url.String, Description: description.String,
		Secret: secret.String, PreviousSecret: prev.String, PreviousSecretUntil: nanosPtr(prevUntil),
		CreatedAt: fromNanos(subCreated.Int64),
	}
	return t, true, nil
}

// CompleteDelivery records an attempt of t, sets the delivery's new state
// and releases its lease; with r.Disable it also disables the subscription
// (as of r.AttemptedAt) and fails its other pending deliveries. A delivery
// no longer pending is left alone.
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
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.SubscriptionID, t.MessageID, plantID, attempt, r.AttemptedAt.UnixNano(), code, nullEmpty(r.Error),
			r.Duration.Microseconds(), string(r.State), next); err != nil {
			return wrap("insert webhook attempt", err)
		}
		if !r.Disable {
			return nil
		}
		var owner string
		err = tx.QueryRowContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL RETURNING owner`,
			r.AttemptedAt.UnixNano(), t.SubscriptionID).Scan(&owner)
		switch {
		case err == nil:
			db.subs.add(owner, -1)
		case !errors.Is(err, sql.ErrNoRows): // already disabled, or gone
			return wrap("disable webhook", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
			WHERE subscription_id = ? AND state = 'pending'`, t.SubscriptionID); err != nil {
			return wrap("disable webhook", err)
		}
		return nil
	})
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
