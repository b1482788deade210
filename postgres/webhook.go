package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

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
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		if s.CreatedAt.IsZero() {
			s.CreatedAt = tx.now
		}
		var prev *string
		if s.PreviousSecret != "" {
			prev = &s.PreviousSecret
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_subscriptions (`+subscriptionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			s.ID, s.Owner, s.URL, s.Description, s.Secret, prev, s.PreviousSecretUntil, s.CreatedAt, s.DisabledAt)
		return wrap("insert webhook", err)
	})
}

// FindSubscriptions returns the owner's subscriptions, oldest first.
func (db *DB) FindSubscriptions(ctx context.Context, owner string) ([]*plantstore.Subscription, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = $1 ORDER BY created_at, id`, owner)
	if err != nil {
		return nil, wrap("find webhooks", err)
	}
	defer rows.Close()
	subs := []*plantstore.Subscription{}
	for rows.Next() {
		s, err := scanSubscription(rows)
		if err != nil {
			return nil, wrap("find webhooks", err)
		}
		subs = append(subs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("find webhooks", err)
	}
	return subs, nil
}

// FindSubscriptionByID returns the owner's subscription id.
func (db *DB) FindSubscriptionByID(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	return subscriptionOrNotFound(id, db.pool.QueryRow(ctx,
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE owner = $1 AND id = $2`, owner, id))
}

func subscriptionOrNotFound(id string, row pgx.Row) (*plantstore.Subscription, error) {
	s, err := scanSubscription(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, webhookNotFound(id)
	} else if err != nil {
		return nil, wrap("find webhook", err)
	}
	return s, nil
}

// DeleteSubscription deletes the owner's subscription id with its
// deliveries and attempts, in one transaction.
func (db *DB) DeleteSubscription(ctx context.Context, owner, id string) error {
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE owner = $1 AND id = $2`, owner, id)
		if err != nil {
			return wrap("delete webhook", err)
		}
		if tag.RowsAffected() == 0 {
			return webhookNotFound(id)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE subscription_id = $1`, id); err != nil {
			return wrap("delete webhook deliveries", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_attempts WHERE subscription_id = $1`, id); err != nil {
			return wrap("delete webhook attempts", err)
		}
		return nil
	})
}

// RotateSecret makes secret the signing secret and keeps the old one until
// previousUntil.
func (db *DB) RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*plantstore.Subscription, error) {
	var s *plantstore.Subscription
	err := db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		var err error
		s, err = subscriptionOrNotFound(id, tx.QueryRow(ctx,
			`UPDATE webhook_subscriptions SET previous_secret = secret, previous_secret_until = $1, secret = $2
			WHERE owner = $3 AND id = $4 RETURNING `+subscriptionColumns,
			previousUntil, secret, owner, id))
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
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at
		FROM webhook_attempts WHERE subscription_id = $1 ORDER BY attempted_at DESC, attempt DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, wrap("find webhook attempts", err)
	}
	defer rows.Close()
	attempts := []*plantstore.Attempt{}
	for rows.Next() {
		var a plantstore.Attempt
		var code *int32
		var msg *string
		var durUS int64
		var state string
		if err := rows.Scan(&a.SubscriptionID, &a.MessageID, &a.PlantID, &a.Attempt, &a.AttemptedAt, &code, &msg, &durUS, &state, &a.NextAttemptAt); err != nil {
			return nil, wrap("find webhook attempts", err)
		}
		a.AttemptedAt = a.AttemptedAt.UTC()
		if code != nil {
			a.StatusCode = int(*code)
		}
		if msg != nil {
			a.Error = *msg
		}
		a.Duration = time.Duration(durUS) * time.Microsecond
		a.State = plantstore.DeliveryState(state)
		a.NextAttemptAt = utcPtr(a.NextAttemptAt)
		attempts = append(attempts, &a)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("find webhook attempts", err)
	}
	return attempts, nil
}

// ClaimTasks leases up to limit due deliveries until now+lease, oldest next
// attempt first, in one transaction: SELECT ... FOR UPDATE SKIP LOCKED
// locks the due rows that no other claim holds (a concurrent claim skips
// them rather than waiting), then the lease is set before COMMIT. Once
// committed, the lease keeps the rows out of every claim until it ends, so
// two replicas never hold the same delivery at once. (CockroachDB supports
// SKIP LOCKED since 23.1.) A due delivery whose subscription is disabled or
// gone is marked failed and not returned, so fewer than limit may come back
// while more are due.
func (db *DB) ClaimTasks(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*plantstore.Task, error) {
	if limit < 1 {
		return nil, nil
	}
	now = now.UTC()
	var tasks []*plantstore.Task
	err := db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		tasks = nil
		rows, err := tx.Query(ctx, `SELECT message_id, subscription_id, owner, plant_id, payload, attempts, created_at
			FROM webhook_deliveries
			WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
			ORDER BY next_attempt_at LIMIT $2
			FOR UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return wrap("claim webhook tasks", err)
		}
		var due []*plantstore.Task
		var subIDs []string
		for rows.Next() {
			var t plantstore.Task
			if err := rows.Scan(&t.MessageID, &t.SubscriptionID, &t.Owner, &t.PlantID, &t.Payload, &t.Attempts, &t.CreatedAt); err != nil {
				rows.Close()
				return wrap("claim webhook tasks", err)
			}
			t.CreatedAt = t.CreatedAt.UTC()
			due = append(due, &t)
			subIDs = append(subIDs, t.SubscriptionID)
		}
		if err := rows.Err(); err != nil {
			return wrap("claim webhook tasks", err)
		}
		if len(due) == 0 {
			return nil
		}
		subs := make(map[string]*plantstore.Subscription)
		rows, err = tx.Query(ctx, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE id = ANY($1)`, subIDs)
		if err != nil {
			return wrap("claim webhook tasks", err)
		}
		for rows.Next() {
			s, err := scanSubscription(rows)
			if err != nil {
				rows.Close()
				return wrap("claim webhook tasks", err)
			}
			subs[s.ID] = s
		}
		if err := rows.Err(); err != nil {
			return wrap("claim webhook tasks", err)
		}
		pipe := &pgx.Batch{}
		for _, t := range due {
			s := subs[t.SubscriptionID]
			if s == nil || s.DisabledAt != nil {
				pipe.Queue(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
					WHERE message_id = $1 AND subscription_id = $2`, t.MessageID, t.SubscriptionID)
				continue
			}
			t.URL = s.URL
			t.Secrets = s.SigningSecrets(now)
			tasks = append(tasks, t)
			pipe.Queue(`UPDATE webhook_deliveries SET lease_until = $1 WHERE message_id = $2 AND subscription_id = $3`,
				now.Add(lease), t.MessageID, t.SubscriptionID)
		}
		if err := tx.SendBatch(ctx, pipe).Close(); err != nil {
			return wrap("lease webhook tasks", err)
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
		return errors.New("postgres: complete webhook task: pending state without a next attempt time")
	}
	var next *time.Time
	if r.State == plantstore.DeliveryPending {
		next = r.NextAttemptAt
	}
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		// The subscription row first, then deliveries: completions that
		// disable lock in the same order as each other.
		if r.Disable {
			if _, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET disabled_at = $1 WHERE id = $2 AND disabled_at IS NULL`,
				tx.now, t.SubscriptionID); err != nil {
				return wrap("disable webhook", err)
			}
		}
		var attempt int
		var plantID int64
		err := tx.QueryRow(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, state = $1, next_attempt_at = $2, lease_until = NULL
			WHERE message_id = $3 AND subscription_id = $4 AND state = 'pending' RETURNING attempts, plant_id`,
			string(r.State), next, t.MessageID, t.SubscriptionID).Scan(&attempt, &plantID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return wrap("complete webhook task", err)
		}
		at := r.AttemptedAt
		if at.IsZero() {
			at = tx.now
		}
		var code *int32
		if r.StatusCode != 0 {
			c := int32(r.StatusCode)
			code = &c
		}
		var msg *string
		if r.Error != "" {
			msg = &r.Error
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, status_code, error, duration_us, state, next_attempt_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			t.SubscriptionID, t.MessageID, plantID, attempt, at, code, msg, r.Duration.Microseconds(), string(r.State), next); err != nil {
			return wrap("insert webhook attempt", err)
		}
		if r.Disable {
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, lease_until = NULL
				WHERE subscription_id = $1 AND state = 'pending'`, t.SubscriptionID); err != nil {
				return wrap("disable webhook", err)
			}
		}
		return nil
	})
}

// OutboxStats returns how many deliveries are pending and when the oldest
// of them was created.
func (db *DB) OutboxStats(ctx context.Context) (int, time.Time, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var n int
	var oldest *time.Time
	if err := db.pool.QueryRow(ctx, `SELECT COUNT(*), MIN(created_at) FROM webhook_deliveries WHERE state = 'pending'`).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, wrap("outbox stats", err)
	}
	if oldest == nil {
		return n, time.Time{}, nil
	}
	return n, oldest.UTC(), nil
}

func scanSubscription(row pgx.Row) (*plantstore.Subscription, error) {
	var s plantstore.Subscription
	var prev *string
	if err := row.Scan(&s.ID, &s.Owner, &s.URL, &s.Description, &s.Secret, &prev, &s.PreviousSecretUntil, &s.CreatedAt, &s.DisabledAt); err != nil {
		return nil, err
	}
	if prev != nil {
		s.PreviousSecret = *prev
	}
	s.CreatedAt = s.CreatedAt.UTC()
	s.PreviousSecretUntil = utcPtr(s.PreviousSecretUntil)
	s.DisabledAt = utcPtr(s.DisabledAt)
	return &s, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
