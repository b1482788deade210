package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/plantstore/plantstore"
)

var (
	_ plantstore.WebhookService = (*DB)(nil)
	_ plantstore.OutboxService  = (*DB)(nil)
)

const subscriptionColumns = `id, owner, url, description, secret, previous_secret, previous_secret_until, created_at, disabled_at`

func webhookNotFound(id string) error {
	return plantstore.Errorf(plantstore.CodeWebhookNotFound, "webhook %s not found", id)
}

// CreateSubscription stores s. A zero CreatedAt is set to the time of the
// transaction.
func (db *DB) CreateSubscription(ctx context.Context, s *plantstore.Subscription) error {
	return db.update(ctx, func(ctx context.Context, tx *Tx) error {
		if s.CreatedAt.IsZero() {
			s.CreatedAt = tx.now
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhook_subscriptions (`+subscriptionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.Owner, s.URL, s.Description, s.Secret, nullEmpty(s.PreviousSecret),
			nullNanos(s.PreviousSecretUntil), s.CreatedAt.UnixNano(), nullNanos(s.DisabledAt))
		if err != nil {
			return fmt.Errorf("sqlite: insert webhook: %w", err)
		}
		return nil
	})
}

// FindSubscriptions returns the owner's subscriptions, oldest first.
func (db *DB) FindSubscriptions(ctx context.Context, owner string) ([]*plantstore.Subscription, error) {
	st, err := db.readStmt(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = ? ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find webhooks: %w", err)
	}
	rows, err := st.QueryContext(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find webhooks: %w", err)
	}
	defer rows.Close()
	subs := []*plantstore.Subscription{}
	for rows.Next() {
		s, err := scanSubscription(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: find webhooks: %w", err)
		}
		subs = append(subs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find webhooks: %w", err)
	}
	return subs, nil
}

// FindSubscriptionByID returns the owner's subscription id.
func (db *DB) FindSubscriptionByID(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	st, err := db.readStmt(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = ? AND id = ?`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find webhook: %w", err)
	}
	return subscriptionOrNotFound(id, st.QueryRowContext(ctx, owner, id))
}

func subscriptionOrNotFound(id string, row *sql.Row) (*plantstore.Subscription, error) {
	s, err := scanSubscription(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, webhookNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: find webhook: %w", err)
	}
	return s, nil
}

// DeleteSubscription deletes the owner's subscription id with its
// deliveries and attempts, in one transaction.
func (db *DB) DeleteSubscription(ctx context.Context, owner, id string) error {
	return db.update(ctx, func(ctx context.Context, tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_subscriptions WHERE owner = ? AND id = ?`, owner, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete webhook: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlite: delete webhook: %w", err)
		} else if n == 0 {
			return webhookNotFound(id)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE subscription_id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: delete webhook deliveries: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE subscription_id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: delete webhook attempts: %w", err)
		}
		return nil
	})
}

// RotateSecret makes secret the signing secret and keeps the old one until
// previousUntil.
func (db *DB) RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*plantstore.Subscription, error) {
	var s *plantstore.Subscription
	err := db.update(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		s, err = subscriptionOrNotFound(id, tx.QueryRowContext(ctx,
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

// FindAttempts returns the subscription's latest attempts, newest first, at
// most limit (MaxDeliveriesListed if limit < 1).
func (db *DB) FindAttempts(ctx context.Context, owner, id string, limit int) ([]*plantstore.Attempt, error) {
	if limit < 1 {
		limit = plantstore.MaxDeliveriesListed
	}
	if _, err := db.FindSubscriptionByID(ctx, owner, id); err != nil {
		return nil, err
	}
	st, err := db.readStmt(ctx, `SELECT subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at
		FROM webhook_attempts WHERE subscription_id = ? ORDER BY attempted_at DESC, attempt DESC LIMIT ?`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find webhook attempts: %w", err)
	}
	rows, err := st.QueryContext(ctx, id, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find webhook attempts: %w", err)
	}
	defer rows.Close()
	attempts := []*plantstore.Attempt{}
	for rows.Next() {
		var a plantstore.Attempt
		var at, durUS int64
		var code sql.NullInt64
		var msg sql.NullString
		var next sql.NullInt64
		var state string
		if err := rows.Scan(&a.SubscriptionID, &a.MessageID, &a.PlantID, &a.Attempt, &at, &code, &msg, &durUS, &state, &next); err != nil {
			return nil, fmt.Errorf("sqlite: find webhook attempts: %w", err)
		}
		a.AttemptedAt = time.Unix(0, at).UTC()
		a.StatusCode = int(code.Int64)
		a.Error = msg.String
		a.Duration = time.Duration(durUS) * time.Microsecond
		a.State = plantstore.DeliveryState(state)
		a.NextAttemptAt = nanosTime(next)
		attempts = append(attempts, &a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find webhook attempts: %w", err)
	}
	return attempts, nil
}

// ClaimTasks leases up to limit due deliveries until now+lease, oldest
// next attempt first. SQLite has one writer, so the select and the lease
// update, in one write transaction, cannot race with another claim. A due
// delivery whose subscription is disabled or gone is marked failed and not
// returned (so fewer than limit may come back while more are due).
func (db *DB) ClaimTasks(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*plantstore.Task, error) {
	if limit < 1 {
		return nil, nil
	}
	var tasks []*plantstore.Task
	err := db.update(ctx, func(ctx context.Context, tx *Tx) error {
		tasks = nil
		rows, err := tx.QueryContext(ctx, `SELECT d.message_id, d.subscription_id, d.owner, d.plant_id, d.payload, d.attempts, d.created_at,
			s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until, s.disabled_at
			FROM webhook_deliveries d LEFT JOIN webhook_subscriptions s ON s.id = d.subscription_id
			WHERE d.state = 'pending' AND d.next_attempt_at <= ?1 AND (d.lease_until IS NULL OR d.lease_until <= ?1)
			ORDER BY d.next_attempt_at LIMIT ?2`, now.UnixNano(), limit)
		if err != nil {
			return fmt.Errorf("sqlite: claim webhook tasks: %w", err)
		}
		var dead []*plantstore.Task
		for rows.Next() {
			var t plantstore.Task
			var created int64
			var subID, url, secret, prev sql.NullString
			var prevUntil, disabled sql.NullInt64
			if err := rows.Scan(&t.MessageID, &t.SubscriptionID, &t.Owner, &t.PlantID, &t.Payload, &t.Attempts, &created,
				&subID, &url, &secret, &prev, &prevUntil, &disabled); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: claim webhook tasks: %w", err)
			}
			t.CreatedAt = time.Unix(0, created).UTC()
			if !subID.Valid || disabled.Valid {
				dead = append(dead, &t)
				continue
			}
			s := plantstore.Subscription{Secret: secret.String, PreviousSecret: prev.String, PreviousSecretUntil: nanosTime(prevUntil)}
			t.URL = url.String
			t.Secrets = s.SigningSecrets(now)
			tasks = append(tasks, &t)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlite: claim webhook tasks: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: claim webhook tasks: %w", err)
		}
		for _, t := range dead {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
				WHERE message_id = ? AND subscription_id = ?`, t.MessageID, t.SubscriptionID); err != nil {
				return fmt.Errorf("sqlite: fail webhook delivery: %w", err)
			}
		}
		until := now.Add(lease).UnixNano()
		for _, t := range tasks {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = ? WHERE message_id = ? AND subscription_id = ?`,
				until, t.MessageID, t.SubscriptionID); err != nil {
				return fmt.Errorf("sqlite: lease webhook delivery: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// CompleteTask records an attempt of t, sets the delivery's new state and
// releases its lease; with r.Disable it also disables the subscription and
// fails its other pending deliveries. A delivery no longer pending (already
// completed, or deleted with its subscription) is left alone: no error.
func (db *DB) CompleteTask(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	if r.State == plantstore.DeliveryPending && r.NextAttemptAt == nil {
		return errors.New("sqlite: complete webhook task: pending state without a next attempt time")
	}
	return db.update(ctx, func(ctx context.Context, tx *Tx) error {
		var next sql.NullInt64
		if r.State == plantstore.DeliveryPending {
			next = sql.NullInt64{Int64: r.NextAttemptAt.UnixNano(), Valid: true}
		}
		var attempt int
		var plantID int64
		err := tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?, next_attempt_at = ?, lease_until = NULL
			WHERE message_id = ? AND subscription_id = ? AND state = 'pending' RETURNING attempts, plant_id`,
			string(r.State), next, t.MessageID, t.SubscriptionID).Scan(&attempt, &plantID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return fmt.Errorf("sqlite: complete webhook task: %w", err)
		}
		at := r.AttemptedAt
		if at.IsZero() {
			at = tx.now
		}
		var code sql.NullInt64
		if r.StatusCode != 0 {
			code = sql.NullInt64{Int64: int64(r.StatusCode), Valid: true}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.SubscriptionID, t.MessageID, plantID, attempt, at.UnixNano(), code, nullEmpty(r.Error),
			r.Duration.Microseconds(), string(r.State), next); err != nil {
			return fmt.Errorf("sqlite: insert webhook attempt: %w", err)
		}
		if !r.Disable {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_subscriptions SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL`,
			tx.now.UnixNano(), t.SubscriptionID); err != nil {
			return fmt.Errorf("sqlite: disable webhook: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
			WHERE subscription_id = ? AND state = 'pending'`, t.SubscriptionID); err != nil {
			return fmt.Errorf("sqlite: disable webhook: %w", err)
		}
		return nil
	})
}

// OutboxStats returns how many deliveries are pending and when the oldest
// of them was created.
func (db *DB) OutboxStats(ctx context.Context) (int, time.Time, error) {
	st, err := db.readStmt(ctx, `SELECT COUNT(*), MIN(created_at) FROM webhook_deliveries WHERE state = 'pending'`)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: outbox stats: %w", err)
	}
	var n int
	var oldest sql.NullInt64
	if err := st.QueryRowContext(ctx).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: outbox stats: %w", err)
	}
	if !oldest.Valid {
		return n, time.Time{}, nil
	}
	return n, time.Unix(0, oldest.Int64).UTC(), nil
}

func scanSubscription(s scanner) (*plantstore.Subscription, error) {
	var sub plantstore.Subscription
	var prev sql.NullString
	var prevUntil, disabled sql.NullInt64
	var created int64
	if err := s.Scan(&sub.ID, &sub.Owner, &sub.URL, &sub.Description, &sub.Secret, &prev, &prevUntil, &created, &disabled); err != nil {
		return nil, err
	}
	sub.PreviousSecret = prev.String
	sub.PreviousSecretUntil = nanosTime(prevUntil)
	sub.CreatedAt = time.Unix(0, created).UTC()
	sub.DisabledAt = nanosTime(disabled)
	return &sub, nil
}

func nullNanos(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func nanosTime(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := time.Unix(0, n.Int64).UTC()
	return &t
}

func nullEmpty(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
