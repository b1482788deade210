package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

const subscriptionColumns = `id, owner, url, description, secret, previous_secret, previous_secret_until, created_at, disabled_at, disabled_reason, failing_since, event_mask`

// InsertSubscription stores s unless its owner has max subscriptions or
// more (plantstore.ErrLimit). Writes are serialised (one writer, one
// transaction per batch, its writes in order), so the count and the insert
// cannot interleave with another create's.
func (db *DB) InsertSubscription(ctx context.Context, s *plantstore.Subscription, max int) error {
	return db.update(ctx, "insert webhook", func(ctx context.Context, tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_subscriptions WHERE owner = ?`, s.Owner).Scan(&n); err != nil {
			return wrap("count webhooks", err)
		}
		if n >= max {
			return plantstore.ErrLimit
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhook_subscriptions (`+subscriptionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.Owner, s.URL, s.Description, s.Secret, nullEmpty(s.PreviousSecret),
			nullNanos(s.PreviousSecretUntil), s.CreatedAt.UnixNano(), nullNanos(s.DisabledAt),
			nullEmpty(string(s.DisabledReason)), nullNanos(s.FailingSince), int64(plantstore.Mask(s.Types)))
		if isUniqueViolation(err) {
			return plantstore.ErrExists
		} else if err != nil {
			return wrap("insert webhook", err)
		}
		if s.DisabledAt == nil {
			db.subs.add(s.Owner, 1)
		}
		return nil
	})
}

// ListSubscriptions returns at most f.Limit of the owner's subscriptions
// after f.After, by id.
func (db *DB) ListSubscriptions(ctx context.Context, f plantstore.SubscriptionFilter) ([]*plantstore.Subscription, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = ? AND id > ? ORDER BY id LIMIT ?`)
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	after := "" // sorts before every id
	if f.After != nil {
		after = *f.After
	}
	rows, err := st.QueryContext(ctx, f.Owner, after, f.Limit)
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	defer rows.Close()
	subs := []*plantstore.Subscription{}
	for rows.Next() {
		s, err := scanSubscription(rows)
		if err != nil {
			return nil, wrap("list webhooks", err)
		}
		subs = append(subs, s)
	}
	return subs, wrap("list webhooks", rows.Err())
}

// FindSubscription returns the owner's subscription id.
func (db *DB) FindSubscription(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = ? AND id = ?`)
	if err != nil {
		return nil, wrap("find webhook", err)
	}
	return subscriptionRow(st.QueryRowContext(ctx, owner, id))
}

// subscriptionRow scans a subscription, sql.ErrNoRows as ErrNotFound.
func subscriptionRow(row *sql.Row) (*plantstore.Subscription, error) {
	s, err := scanSubscription(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, plantstore.ErrNotFound
	} else if err != nil {
		return nil, wrap("find webhook", err)
	}
	return s, nil
}

// DeleteSubscription deletes the owner's subscription id with its
// deliveries and attempts, in one transaction.
func (db *DB) DeleteSubscription(ctx context.Context, owner, id string) error {
	return db.update(ctx, "delete webhook", func(ctx context.Context, tx *Tx) error {
		var enabled bool
		err := tx.QueryRowContext(ctx, `DELETE FROM webhook_subscriptions WHERE owner = ? AND id = ? RETURNING disabled_at IS NULL`, owner, id).Scan(&enabled)
		if errors.Is(err, sql.ErrNoRows) {
			return plantstore.ErrNotFound
		} else if err != nil {
			return wrap("delete webhook", err)
		}
		if enabled {
			db.subs.add(owner, -1)
		}
		for _, table := range []string{"webhook_deliveries", "webhook_attempts"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE subscription_id = ?`, id); err != nil {
				return wrap("delete webhook: "+table, err)
			}
		}
		return nil
	})
}

// RotateSecret makes secret the signing secret and keeps the old one until
// previousUntil.
func (db *DB) RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*plantstore.Subscription, error) {
	var s *plantstore.Subscription
	err := db.update(ctx, "rotate webhook secret", func(ctx context.Context, tx *Tx) error {
		var err error
		s, err = subscriptionRow(tx.QueryRowContext(ctx,
			`UPDATE webhook_subscriptions SET previous_secret = secret, previous_secret_until = ?, secret = ?
			WHERE owner = ? AND id = ? RETURNING `+subscriptionColumns,
			previousUntil.UnixNano(), secret, owner, id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ListAttempts returns at most f.Limit of the subscription's attempts
// after f.After, newest first, in state f.State when set.
func (db *DB) ListAttempts(ctx context.Context, f plantstore.AttemptFilter) ([]*plantstore.Attempt, error) {
	if _, err := db.FindSubscription(ctx, f.Owner, f.SubscriptionID); err != nil {
		return nil, err
	}
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at, response_body
		FROM webhook_attempts WHERE subscription_id = ?1 AND (?2 = '' OR state = ?2)
			AND (?3 IS NULL OR (attempted_at, message_id, attempt) < (?3, ?4, ?5))
		ORDER BY attempted_at DESC, message_id DESC, attempt DESC LIMIT ?6`)
	if err != nil {
		return nil, wrap("list webhook attempts", err)
	}
	var at, msg, n any
	if f.After != nil {
		at, msg, n = f.After.AttemptedAt.UnixNano(), f.After.MessageID, f.After.Attempt
	}
	rows, err := st.QueryContext(ctx, f.SubscriptionID, string(f.State), at, msg, n, f.Limit)
	if err != nil {
		return nil, wrap("list webhook attempts", err)
	}
	defer rows.Close()
	attempts := []*plantstore.Attempt{}
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, wrap("list webhook attempts", err)
		}
		attempts = append(attempts, a)
	}
	return attempts, wrap("list webhook attempts", rows.Err())
}

func scanAttempt(s scanner) (*plantstore.Attempt, error) {
	var a plantstore.Attempt
	var at, durUS int64
	var code, next sql.NullInt64
	var msg, body sql.NullString
	var state string
	if err := s.Scan(&a.SubscriptionID, &a.MessageID, &a.PlantID, &a.Attempt, &at, &code, &msg, &durUS, &state, &next, &body); err != nil {
		return nil, err
	}
	a.ResponseBody = body.String
	a.AttemptedAt = fromNanos(at)
	a.StatusCode = int(code.Int64)
	a.Error = msg.String
	a.Duration = time.Duration(durUS) * time.Microsecond
	a.State = plantstore.DeliveryState(state)
	a.NextAttemptAt = nanosPtr(next)
	return &a, nil
}

func scanSubscription(s scanner) (*plantstore.Subscription, error) {
	var sub plantstore.Subscription
	var prev, reason sql.NullString
	var prevUntil, disabled, failing sql.NullInt64
	var created, mask int64
	if err := s.Scan(&sub.ID, &sub.Owner, &sub.URL, &sub.Description, &sub.Secret, &prev, &prevUntil, &created,
		&disabled, &reason, &failing, &mask); err != nil {
		return nil, err
	}
	sub.PreviousSecret = prev.String
	sub.PreviousSecretUntil = nanosPtr(prevUntil)
	sub.CreatedAt = fromNanos(created)
	sub.DisabledAt = nanosPtr(disabled)
	sub.DisabledReason = plantstore.DisabledReason(reason.String)
	if sub.DisabledAt != nil && sub.DisabledReason == "" {
		sub.DisabledReason = plantstore.DisabledManual // stored as NULL
	}
	sub.FailingSince = nanosPtr(failing)
	sub.Types = plantstore.EventMask(mask).Types()
	return &sub, nil
}
