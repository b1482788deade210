package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

// OutboxService is the Dispatcher's side of the transactional outbox over
// an OutboxStore (the Dispatcher's Queue).
type OutboxService struct {
	store        plantstore.OutboxStore
	now          func() time.Time
	disableAfter time.Duration // 0: no automatic disabling
}

// ClaimDeliveries leases at most c.Limit due deliveries, chosen fairly
// (Pick), and sets each task's URL and the signing secrets valid now. The
// choice is made here, between the store's two calls: DueDeliveries reads
// each subscription's earliest due deliveries and those leased now (the
// lease is timed by the database's clock), Pick chooses within c's bounds,
// and the store's ClaimDeliveries leases the chosen ones that are still due
// and unleased, and fails the pending deliveries of the subscriptions
// found gone or disabled (so fewer than c.Limit may come back while more
// are due). Concurrent claims (other processes included) never return the
// same delivery. A poll that finds nothing to take writes nothing.
func (s *OutboxService) ClaimDeliveries(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error) {
	if c.Limit < 1 {
		return nil, nil
	}
	if c.Lease <= 0 {
		return nil, errors.New("service: claim webhook deliveries: the lease must be positive")
	}
	due, leased, err := s.store.DueDeliveries(ctx, duePerSubscription(c))
	if err != nil {
		return nil, storeError("claim webhook deliveries", err)
	}
	live := make([]plantstore.DueDelivery, 0, len(due))
	var dead []string
	for _, d := range due {
		switch {
		case d.Live:
			live = append(live, d)
		case !slices.Contains(dead, d.SubscriptionID): // few: each is failed at once
			dead = append(dead, d.SubscriptionID)
		}
	}
	picked := Pick(c, live, leased)
	if len(picked) == 0 && len(dead) == 0 {
		return nil, nil
	}
	tasks, err := s.store.ClaimDeliveries(ctx, picked, dead, c.Lease)
	if err != nil {
		return nil, storeError("claim webhook deliveries", err)
	}
	now := s.now()
	for _, t := range tasks {
		t.URL = t.Subscription.URL
		t.Secrets = t.Subscription.SigningSecrets(now)
	}
	return tasks, nil
}

// CompleteDelivery records an attempt; a zero r.AttemptedAt means now. With
// automatic disabling on, a failed attempt disables the subscription when
// every attempt has failed for longer than the setting.
func (s *OutboxService) CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	switch {
	case r.State == plantstore.DeliveryPending && r.NextAttemptAt == nil:
		return errors.New("service: complete webhook delivery: pending state without a next attempt time")
	case r.State != plantstore.DeliveryPending:
		r.NextAttemptAt = nil
	}
	if r.AttemptedAt.IsZero() {
		r.AttemptedAt = s.now()
	}
	r.AttemptedAt = r.AttemptedAt.UTC()
	r.FailingCutoff = time.Time{}
	if s.disableAfter > 0 && r.State != plantstore.DeliverySucceeded {
		r.FailingCutoff = r.AttemptedAt.Add(-s.disableAfter)
	}
	if err := s.store.CompleteDelivery(ctx, t, r); err != nil {
		return storeError("complete webhook delivery", err)
	}
	return nil
}

// PruneOutbox deletes at most limit rows of delivery history older than
// before: attempts, and finished deliveries.
func (s *OutboxService) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	n, err := s.store.PruneOutbox(ctx, before.UTC(), limit)
	if err != nil {
		return n, storeError("prune webhook history", err)
	}
	return n, nil
}

// OutboxStats returns how many deliveries are pending and when the oldest
// of them was created.
func (s *OutboxService) OutboxStats(ctx context.Context) (int, time.Time, error) {
	n, oldest, err := s.store.OutboxStats(ctx)
	if err != nil {
		return 0, time.Time{}, storeError("outbox stats", err)
	}
	return n, oldest, nil
}

// The claim scheduler: which due deliveries a claim takes.

// duePerSubscription is how many of each subscription's earliest due
// deliveries ClaimDeliveries reads for Pick: all Pick can take of one.
func duePerSubscription(c plantstore.Claim) int {
	if c.PerSubscription > 0 {
		return min(c.Limit, c.PerSubscription)
	}
	return c.Limit
}

// Pick chooses the deliveries of due that claim c takes, given those in
// flight (leased, and c.Busy), at most c.Limit: no subscription past c.PerSubscription, no owner
// past c.PerOwner, and, among the rest, the least busy first, in rounds:
// every owner's next delivery before any owner's one after it, the owner
// with the fewest in flight first, and within an owner every
// subscription's next delivery before any subscription's one after it; ties
// go to the earliest due. So one owner's backlog, however old, takes no
// more than its share while another owner has a delivery due.
//
// ClaimDeliveries calls it with every subscription's earliest due deliveries
// (duePerSubscription of each), which is all it can pick from.
func Pick(c plantstore.Claim, due []plantstore.DueDelivery, inFlight []plantstore.InFlight) []plantstore.DueDelivery {
	if c.Limit < 1 || len(due) == 0 {
		return nil
	}
	subBusy := make(map[string]int, len(inFlight))
	ownerBusy := make(map[string]int, len(inFlight))
	for _, fs := range [][]plantstore.InFlight{inFlight, c.Busy} {
		for _, f := range fs {
			subBusy[f.SubscriptionID] += f.N
			ownerBusy[f.Owner] += f.N
		}
	}
	cands := make([]pickCand, len(due))
	for i := range due {
		cands[i].d = &due[i]
	}
	slices.SortFunc(cands, func(a, b pickCand) int { return earliest(a.d, b.d) })
	// Each subscription's deliveries take its next in-flight levels.
	cands = takeLevels(cands, func(x *pickCand) string { return x.d.SubscriptionID }, subBusy, c.PerSubscription,
		func(x *pickCand, level int) { x.sub = level })
	// Within an owner, lower subscription levels first; each then takes
	// the owner's next level.
	slices.SortStableFunc(cands, func(a, b pickCand) int {
		if c := strings.Compare(a.d.Owner, b.d.Owner); c != 0 {
			return c
		}
		return a.sub - b.sub
	})
	cands = takeLevels(cands, func(x *pickCand) string { return x.d.Owner }, ownerBusy, c.PerOwner,
		func(x *pickCand, level int) { x.owner = level })
	slices.SortFunc(cands, func(a, b pickCand) int {
		if a.owner != b.owner {
			return a.owner - b.owner
		}
		if a.sub != b.sub {
			return a.sub - b.sub
		}
		return earliest(a.d, b.d)
	})
	out := make([]plantstore.DueDelivery, 0, min(c.Limit, len(cands)))
	for _, x := range cands[:min(c.Limit, len(cands))] {
		out = append(out, *x.d)
	}
	return out
}

// pickCand is a delivery Pick considers, with the in-flight levels it
// would take in its subscription and its owner.
type pickCand struct {
	d          *plantstore.DueDelivery
	sub, owner int
}

// earliest orders deliveries by due time, then subscription and message.
func earliest(a, b *plantstore.DueDelivery) int {
	if c := a.NextAttemptAt.Compare(b.NextAttemptAt); c != 0 {
		return c
	}
	if c := strings.Compare(a.SubscriptionID, b.SubscriptionID); c != 0 {
		return c
	}
	return strings.Compare(a.MessageID, b.MessageID)
}

// takeLevels gives each candidate, in order, the next in-flight level of
// its key (the first is busy[key]) through set, and leaves out those at or
// past bound (0: no bound).
func takeLevels(cands []pickCand, key func(*pickCand) string, busy map[string]int, bound int, set func(*pickCand, int)) []pickCand {
	next := make(map[string]int, len(busy))
	kept := cands[:0]
	for _, x := range cands {
		k := key(&x)
		level, ok := next[k]
		if !ok {
			level = busy[k]
		}
		next[k] = level + 1
		if bound > 0 && level >= bound {
			continue
		}
		set(&x, level)
		kept = append(kept, x)
	}
	return kept
}
