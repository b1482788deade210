package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

// UpdateSubscription applies u as of now and returns the subscription
// before and after. A disable fails the pending deliveries and stores no
// reason (read back as manual); an enable clears the disabled state and the
// failing streak. The count of enabled subscriptions follows.
func (db *DB) UpdateSubscription(ctx context.Context, owner, id string, u plantstore.SubscriptionUpdate, now time.Time) (before, after *plantstore.Subscription, err error) {
	err = db.update(ctx, "update webhook", func(ctx context.Context, tx *Tx) error {
		b, err := subscriptionRow(tx.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = ? AND id = ?`, owner, id))
		if err != nil {
			return err
		}
		a := *b
		if u.URL != nil {
			a.URL = *u.URL
		}
		if u.Description != nil {
			a.Description = *u.Description
		}
		if u.Types != nil {
			a.Types = *u.Types
		}
		wasEnabled := b.DisabledAt == nil
		switch {
		case u.Enabled == nil:
		case *u.Enabled && !wasEnabled:
			a.DisabledAt, a.DisabledReason, a.FailingSince = nil, "", nil
		case !*u.Enabled && wasEnabled:
			a.DisabledAt, a.DisabledReason = &now, plantstore.DisabledManual
		}
		reason := a.DisabledReason
		if reason == plantstore.DisabledManual {
			reason = ""
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET url = ?, description = ?, disabled_at = ?, disabled_reason = ?, failing_since = ?, event_mask = ?
			WHERE id = ?`, a.URL, a.Description, nullNanos(a.DisabledAt), nullEmpty(string(reason)), nullNanos(a.FailingSince), int64(plantstore.Mask(a.Types)), id); err != nil {
			return wrap("update webhook", err)
		}
		switch isEnabled := a.DisabledAt == nil; {
		case isEnabled && !wasEnabled:
			db.subs.add(owner, 1)
			// A re-enable is a fresh start for recover too.
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET recovered_at = NULL
				WHERE subscription_id = ? AND recovered_at IS NOT NULL`, id); err != nil {
				return wrap("enable webhook", err)
			}
		case !isEnabled && wasEnabled:
			db.subs.add(owner, -1)
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
				WHERE subscription_id = ? AND state = 'pending'`, id); err != nil {
				return wrap("disable webhook", err)
			}
		}
		before, after = b, &a
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// ResendDelivery makes the subscription's delivery pending and due at now,
// and recoverable again.
func (db *DB) ResendDelivery(ctx context.Context, owner, id, messageID string, now time.Time) (*plantstore.Delivery, error) {
	var d *plantstore.Delivery
	err := db.update(ctx, "resend webhook delivery", func(ctx context.Context, tx *Tx) error {
		var err error
		d, err = scanDelivery(tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?, recovered_at = NULL
			WHERE message_id = ? AND subscription_id = ? AND owner = ?
			RETURNING message_id, subscription_id, plant_id, state, attempts, created_at, next_attempt_at`,
			now.UnixNano(), messageID, id, owner))
		if errors.Is(err, sql.ErrNoRows) {
			return plantstore.ErrNotFound
		}
		return wrap("resend webhook delivery", err)
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// RecoverDeliveries makes at most limit failed deliveries created at or
// after since that no recover re-queued yet pending and due at now, and
// marks them recovered (recovered_at).
func (db *DB) RecoverDeliveries(ctx context.Context, owner, id string, since, now time.Time, limit int) (int, error) {
	var n int
	err := db.update(ctx, "recover webhook deliveries", func(ctx context.Context, tx *Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE owner = ? AND id = ?)`, owner, id).Scan(&exists); err != nil {
			return wrap("recover webhook deliveries", err)
		}
		if !exists {
			return plantstore.ErrNotFound
		}
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?1, lease_until = NULL, recovered_at = ?1
			WHERE rowid IN (SELECT rowid FROM webhook_deliveries
				WHERE subscription_id = ?3 AND state = 'failed' AND created_at >= ?2 AND recovered_at IS NULL
				ORDER BY created_at LIMIT ?4)`, now.UnixNano(), since.UnixNano(), id, limit)
		if err != nil {
			return wrap("recover webhook deliveries", err)
		}
		k, err := res.RowsAffected()
		n = int(k)
		return wrap("recover webhook deliveries", err)
	})
	return n, err
}

func scanDelivery(s scanner) (*plantstore.Delivery, error) {
	var d plantstore.Delivery
	var created int64
	var next sql.NullInt64
	var state string
	if err := s.Scan(&d.MessageID, &d.SubscriptionID, &d.PlantID, &state, &d.Attempts, &created, &next); err != nil {
		return nil, err
	}
	d.State = plantstore.DeliveryState(state)
	d.CreatedAt = fromNanos(created)
	d.NextAttemptAt = nanosPtr(next)
	return &d, nil
}
