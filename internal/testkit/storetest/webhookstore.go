package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The cases of this file call the backend's WebhookStore and OutboxStore
// directly.

// ignoreTaskDispatch leaves out the fields of a Task that the OutboxService
// sets, not the row store.
var ignoreTaskDispatch = cmpopts.IgnoreFields(plantstore.Task{}, "URL", "Secrets")

// insertSubscription stores a subscription of owner created at createdAt,
// disabled at disabledAt unless it is nil.
func insertSubscription(t *testing.T, b plantstore.Backend, owner string, createdAt time.Time, disabledAt *time.Time) *plantstore.Subscription {
	t.Helper()
	sub, err := plantstore.NewSubscription(owner, "http://127.0.0.1:9/hooks/"+owner, "desc of "+owner, createdAt)
	if err != nil {
		t.Fatal(err)
	}
	sub.CreatedAt = createdAt
	sub.DisabledAt = disabledAt
	if disabledAt != nil {
		sub.DisabledReason = plantstore.DisabledGone
	}
	if err := b.InsertSubscription(t.Context(), sub, plantstore.MaxMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	return sub
}

func storeSubscription(t *testing.T, b plantstore.Backend, owner, id string) *plantstore.Subscription {
	t.Helper()
	sub, err := b.FindSubscription(t.Context(), owner, id)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// listSubscriptions returns every subscription of owner (at most
// plantstore.MaxPageSize), by id.
func listSubscriptions(t *testing.T, b plantstore.Backend, owner string) []*plantstore.Subscription {
	t.Helper()
	subs, err := b.ListSubscriptions(t.Context(), plantstore.SubscriptionFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

// claimDeliveries leases up to limit due deliveries for an hour, with no
// bound per subscription or owner.
func claimDeliveries(t *testing.T, b plantstore.Backend, limit int) []*plantstore.Task {
	t.Helper()
	return claimWith(t, b, plantstore.Claim{Lease: time.Hour, Limit: limit})
}

// claimStore makes claim c on the store, as the dispatcher does: through the
// service's ClaimDeliveries (the store's DueDeliveries, the service's choice,
// the store's ClaimDeliveries).
func claimStore(ctx context.Context, b plantstore.Backend, c plantstore.Claim) ([]*plantstore.Task, error) {
	return service.New(b, service.Config{}).Outbox.ClaimDeliveries(ctx, c)
}

// claimWith makes claim c on the store.
func claimWith(t *testing.T, b plantstore.Backend, c plantstore.Claim) []*plantstore.Task {
	t.Helper()
	tasks, err := claimStore(t.Context(), b, c)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

func completeDelivery(t *testing.T, b plantstore.Backend, task *plantstore.Task, r plantstore.AttemptResult) {
	t.Helper()
	if err := b.CompleteDelivery(t.Context(), task, r); err != nil {
		t.Fatal(err)
	}
}

func listAttempts(t *testing.T, b plantstore.Backend, owner, id string) []*plantstore.Attempt {
	t.Helper()
	attempts, err := b.ListAttempts(t.Context(), plantstore.AttemptFilter{Owner: owner, SubscriptionID: id, Limit: plantstore.MaxDeliveriesListed})
	if err != nil {
		t.Fatal(err)
	}
	return attempts
}

func testWebhookStore(t *testing.T, bs Backends) {
	t.Run("StoredAsGiven", func(t *testing.T) {
		b := bs.Open(t)
		newSub := func(url, desc string, createdAt time.Time) *plantstore.Subscription {
			sub, err := plantstore.NewSubscription("alice", url, desc, createdAt)
			if err != nil {
				t.Fatal(err)
			}
			sub.CreatedAt = createdAt
			return sub
		}
		plain := newSub("http://127.0.0.2:8080/h?x=1&y=%20", "", fixedNow.In(elsewhere))
		disabled := newSub("http://127.0.0.1:9/hooks", "desc", fixedNow.Add(time.Second))
		disabled.DisabledAt, disabled.DisabledReason = ptr(fixedNow.Add(time.Minute).In(elsewhere)), plantstore.DisabledGone
		// Every field set: rotated, failing, then disabled.
		full := newSub("http://127.0.0.1:9/rotated", "rotated 🌿", fixedNow.Add(2*time.Second))
		full.PreviousSecret, full.PreviousSecretUntil = "whsec_previous", ptr(fixedNow.Add(time.Hour).In(elsewhere))
		full.FailingSince = ptr(fixedNow.Add(-time.Hour).In(elsewhere))
		full.DisabledAt, full.DisabledReason = ptr(fixedNow.Add(3*time.Second).In(elsewhere)), plantstore.DisabledFailing
		subs := []*plantstore.Subscription{plain, disabled, full}
		for _, sub := range subs {
			if err := b.InsertSubscription(t.Context(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
				t.Fatal(err)
			}
		}
		slices.SortFunc(subs, func(x, y *plantstore.Subscription) int { return strings.Compare(x.ID, y.ID) })
		for _, want := range subs {
			if diff := cmp.Diff(want, storeSubscription(t, b, "alice", want.ID), equateTime); diff != "" {
				t.Fatalf("FindSubscription (-want +got):\n%s", diff)
			}
		}
		if diff := cmp.Diff(subs, listSubscriptions(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("ListSubscriptions, by id, disabled ones included (-want +got):\n%s", diff)
		}
	})

	// ListSubscriptions pages by id, after f.After (exclusive), at most
	// f.Limit: an owner's only, disabled ones included.
	t.Run("ListSubscriptions", func(t *testing.T) {
		b := bs.Open(t)
		if got := listSubscriptions(t, b, "alice"); len(got) != 0 {
			t.Fatalf("%d subscriptions in a new backend, want 0", len(got))
		}
		var want []*plantstore.Subscription
		for i := range 5 {
			var disabled *time.Time
			if i == 2 {
				disabled = ptr(fixedNow)
			}
			want = append(want, insertSubscription(t, b, "alice", fixedNow.Add(-time.Duration(i)*time.Second), disabled))
		}
		insertSubscription(t, b, "bob", fixedNow.Add(-time.Hour), nil)
		slices.SortFunc(want, func(x, y *plantstore.Subscription) int { return strings.Compare(x.ID, y.ID) })
		if diff := cmp.Diff(want, listSubscriptions(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("ListSubscriptions, by id (-want +got):\n%s", diff)
		}
		var got []*plantstore.Subscription
		f := plantstore.SubscriptionFilter{Owner: "alice", Limit: 2}
		for range 4 {
			page, err := b.ListSubscriptions(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > f.Limit {
				t.Fatalf("a page of %d subscriptions with Limit %d", len(page), f.Limit)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			f.After = &page[len(page)-1].ID
		}
		if diff := cmp.Diff(want, got, equateTime); diff != "" {
			t.Fatalf("ListSubscriptions by pages of 2 (-want +got):\n%s", diff)
		}
		// After an id that is nobody's (between the second and the third):
		// the ones after it.
		f = plantstore.SubscriptionFilter{Owner: "alice", After: ptr(want[1].ID + "0"), Limit: 10}
		page, err := b.ListSubscriptions(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[2:], page, equateTime); diff != "" {
			t.Fatalf("ListSubscriptions after %s (-want +got):\n%s", *f.After, diff)
		}
	})

	// InsertSubscription refuses with ErrLimit once the owner has max
	// subscriptions, disabled ones included; other owners are not counted,
	// and a delete makes room.
	t.Run("ErrLimit", func(t *testing.T) {
		b := bs.Open(t)
		const max = 3
		var subs []*plantstore.Subscription
		for i := range max {
			sub, err := plantstore.NewSubscription("alice", "http://127.0.0.1:9/hooks", "", fixedNow)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				sub.DisabledAt, sub.DisabledReason = ptr(fixedNow), plantstore.DisabledGone
			}
			if err := b.InsertSubscription(t.Context(), sub, max); err != nil {
				t.Fatalf("subscription %d of %d: %v", i+1, max, err)
			}
			subs = append(subs, sub)
		}
		insertSubscription(t, b, "bob", fixedNow, nil)
		extra, err := plantstore.NewSubscription("alice", "http://127.0.0.1:9/hooks", "", fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		checkIs(t, "InsertSubscription past the cap", b.InsertSubscription(t.Context(), extra, max), plantstore.ErrLimit)
		if got := len(listSubscriptions(t, b, "alice")); got != max {
			t.Fatalf("alice has %d subscriptions, want %d", got, max)
		}
		// A taken id with the owner at the cap is one error or the other.
		if err := b.InsertSubscription(t.Context(), subs[1], max); !errors.Is(err, plantstore.ErrLimit) && !errors.Is(err, plantstore.ErrExists) {
			t.Fatalf("InsertSubscription of a taken id at the cap: %v, want ErrLimit or ErrExists", err)
		}
		if err := b.DeleteSubscription(t.Context(), "alice", subs[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := b.InsertSubscription(t.Context(), extra, max); err != nil {
			t.Fatalf("InsertSubscription after a delete: %v", err)
		}
		if err := b.InsertSubscription(t.Context(), &plantstore.Subscription{ID: "whk_ffffffffffffffff", Owner: "bob",
			URL: "http://127.0.0.1:9/bob", Secret: "whsec_x", CreatedAt: fixedNow}, 2); err != nil {
			t.Fatalf("bob's second subscription: %v", err)
		}
	})

	// Concurrent inserts of one owner, through every path the backend
	// batches writes on, never pass the cap: exactly max succeed.
	t.Run("ErrLimitConcurrent", func(t *testing.T) {
		const max, n = 5, 24
		b := bs.Open(t)
		subs := make([]*plantstore.Subscription, n)
		for i := range subs {
			sub, err := plantstore.NewSubscription("alice", fmt.Sprintf("http://127.0.0.1:9/%d", i), "", fixedNow)
			if err != nil {
				t.Fatal(err)
			}
			subs[i] = sub
		}
		insertRace(t, max, n, func(i int) error { return b.InsertSubscription(t.Context(), subs[i], max) })
		if got := len(listSubscriptions(t, b, "alice")); got != max {
			t.Fatalf("alice has %d subscriptions, want %d", got, max)
		}
	})

	t.Run("ErrDuplicateID", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		other, err := plantstore.NewSubscription("bob", "http://127.0.0.1:9/bob", "", fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		other.ID = sub.ID
		checkIs(t, "InsertSubscription with a taken id", b.InsertSubscription(t.Context(), other, plantstore.DefaultMaxSubscriptions), plantstore.ErrExists)
		if diff := cmp.Diff(sub, storeSubscription(t, b, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("the first subscription (-want +got):\n%s", diff)
		}
		if got := listSubscriptions(t, b, "bob"); len(got) != 0 {
			t.Fatalf("bob has %d subscriptions, want 0", len(got))
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		for _, tt := range []struct{ name, owner, id string }{
			{"OtherOwner", "bob", sub.ID},
			{"OwnerCase", "Alice", sub.ID},
			{"UnknownID", "alice", "whk_0000000000000000"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				got, err := b.FindSubscription(ctx, tt.owner, tt.id)
				checkIs(t, "FindSubscription", err, plantstore.ErrNotFound)
				if got != nil {
					t.Fatalf("FindSubscription returned %+v with an error", got)
				}
				_, err = b.ListAttempts(ctx, plantstore.AttemptFilter{Owner: tt.owner, SubscriptionID: tt.id, Limit: 10})
				checkIs(t, "ListAttempts", err, plantstore.ErrNotFound)
				_, err = b.RotateSecret(ctx, tt.owner, tt.id, "whsec_x", fixedNow)
				checkIs(t, "RotateSecret", err, plantstore.ErrNotFound)
				checkIs(t, "DeleteSubscription", b.DeleteSubscription(ctx, tt.owner, tt.id), plantstore.ErrNotFound)
			})
		}
		if diff := cmp.Diff(sub, storeSubscription(t, b, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("alice's subscription (-want +got):\n%s", diff)
		}
	})

	t.Run("RotateSecret", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		until := fixedNow.Add(plantstore.SecretRotationGrace).In(elsewhere)
		got, err := b.RotateSecret(t.Context(), "alice", sub.ID, "whsec_new", until)
		if err != nil {
			t.Fatal(err)
		}
		want := *sub
		want.Secret, want.PreviousSecret, want.PreviousSecretUntil = "whsec_new", sub.Secret, &until
		if diff := cmp.Diff(&want, got, equateTime); diff != "" {
			t.Fatalf("RotateSecret returned (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(&want, storeSubscription(t, b, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("stored after rotation (-want +got):\n%s", diff)
		}
	})

	// DeleteSubscription takes the subscription's deliveries and attempts
	// with it, and nothing of another's.
	t.Run("DeleteSubscription", func(t *testing.T) {
		b := bs.Open(t)
		gone := insertSubscription(t, b, "alice", fixedNow, nil)
		kept := insertSubscription(t, b, "alice", fixedNow.Add(time.Second), nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		now := fixedNow.Add(time.Minute)
		for _, task := range claimDeliveries(t, b, 10) {
			next := now.Add(time.Hour) // long past: due again at once
			completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: now, StatusCode: 500, State: plantstore.DeliveryPending, NextAttemptAt: &next})
		}
		if err := b.DeleteSubscription(t.Context(), "alice", gone.ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := storeOutboxStats(t, b); n != 1 {
			t.Fatalf("%d pending after delete, want 1 (the other subscription's)", n)
		}
		if got, want := len(listAttempts(t, b, "alice", kept.ID)), 1; got != want {
			t.Fatalf("the other subscription has %d attempts, want %d", got, want)
		}
		tasks := claimDeliveries(t, b, 10)
		if len(tasks) != 1 || tasks[0].SubscriptionID != kept.ID {
			t.Fatalf("claimed %d deliveries after delete, want the other subscription's one", len(tasks))
		}
		// The id is free again.
		again := *gone
		if err := b.InsertSubscription(t.Context(), &again, plantstore.DefaultMaxSubscriptions); err != nil {
			t.Fatalf("InsertSubscription of a deleted id: %v", err)
		}
		if got := listAttempts(t, b, "alice", gone.ID); len(got) != 0 {
			t.Fatalf("a new subscription with a deleted one's id has %d attempts, want 0", len(got))
		}
	})
}

// insertRace runs insert(0) to insert(n-1) at once, each the insert of one
// row of one owner under a cap of max, and checks that exactly max of them
// succeed and the others are refused with ErrLimit.
func insertRace(t *testing.T, max, n int, insert func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = insert(i)
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, plantstore.ErrLimit):
			t.Fatalf("insert %d: %v, want nil or ErrLimit", i, err)
		}
	}
	if ok != max {
		t.Fatalf("%d concurrent inserts succeeded, want %d (the cap)", ok, max)
	}
}
