package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
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
	if err := b.InsertSubscription(t.Context(), sub); err != nil {
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

func listSubscriptions(t *testing.T, b plantstore.Backend, owner string) []*plantstore.Subscription {
	t.Helper()
	subs, err := b.ListSubscriptions(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

func claimDeliveries(t *testing.T, b plantstore.Backend, now, leaseUntil time.Time, limit int) []*plantstore.Task {
	t.Helper()
	tasks, err := b.ClaimDeliveries(t.Context(), now, leaseUntil, limit)
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
	attempts, err := b.ListAttempts(t.Context(), owner, id, plantstore.MaxDeliveriesListed)
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
		disabled.DisabledAt = ptr(fixedNow.Add(time.Minute).In(elsewhere))
		// Every field set: rotated, then disabled.
		full := newSub("http://127.0.0.1:9/rotated", "rotated 🌿", fixedNow.Add(2*time.Second))
		full.PreviousSecret, full.PreviousSecretUntil = "whsec_previous", ptr(fixedNow.Add(time.Hour).In(elsewhere))
		full.DisabledAt = ptr(fixedNow.Add(3 * time.Second).In(elsewhere))
		subs := []*plantstore.Subscription{plain, disabled, full}
		for _, sub := range subs {
			if err := b.InsertSubscription(t.Context(), sub); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range subs {
			if diff := cmp.Diff(want, storeSubscription(t, b, "alice", want.ID), equateTime); diff != "" {
				t.Fatalf("FindSubscription (-want +got):\n%s", diff)
			}
		}
		if diff := cmp.Diff(subs, listSubscriptions(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("ListSubscriptions, oldest first, disabled ones included (-want +got):\n%s", diff)
		}
	})

	t.Run("ListSubscriptions", func(t *testing.T) {
		b := bs.Open(t)
		if got := listSubscriptions(t, b, "alice"); len(got) != 0 {
			t.Fatalf("%d subscriptions in a new backend, want 0", len(got))
		}
		var want []*plantstore.Subscription
		for i := range 3 {
			want = append([]*plantstore.Subscription{insertSubscription(t, b, "alice", fixedNow.Add(-time.Duration(i)*time.Second), nil)}, want...)
		}
		insertSubscription(t, b, "bob", fixedNow.Add(-time.Hour), nil)
		if diff := cmp.Diff(want, listSubscriptions(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("ListSubscriptions, oldest first (-want +got):\n%s", diff)
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
		checkIs(t, "InsertSubscription with a taken id", b.InsertSubscription(t.Context(), other), plantstore.ErrExists)
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
				_, err = b.ListAttempts(ctx, tt.owner, tt.id, 10)
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
		for _, task := range claimDeliveries(t, b, now, now.Add(time.Minute), 10) {
			next := now.Add(time.Hour)
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
		tasks := claimDeliveries(t, b, now.Add(2*time.Hour), now.Add(3*time.Hour), 10)
		if len(tasks) != 1 || tasks[0].SubscriptionID != kept.ID {
			t.Fatalf("claimed %d deliveries after delete, want the other subscription's one", len(tasks))
		}
		// The id is free again.
		again := *gone
		if err := b.InsertSubscription(t.Context(), &again); err != nil {
			t.Fatalf("InsertSubscription of a deleted id: %v", err)
		}
		if got := listAttempts(t, b, "alice", gone.ID); len(got) != 0 {
			t.Fatalf("a new subscription with a deleted one's id has %d attempts, want 0", len(got))
		}
	})
}

func testOutboxStore(t *testing.T, bs Backends) {
	// ClaimDeliveries sets Task.Subscription to the row as it is at the claim.
	t.Run("ClaimFillsSubscription", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		rotated, err := b.RotateSecret(t.Context(), "alice", sub.ID, "whsec_new", fixedNow.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		p := &plantstore.Plant{Owner: "alice", ID: 9, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow.Add(time.Second)}
		ev := mustInsert(t, b, p)
		tasks := claimDeliveries(t, b, fixedNow.Add(time.Minute), fixedNow.Add(2*time.Minute), 10)
		if got, want := len(tasks), 1; got != want {
			t.Fatalf("claimed %d deliveries, want %d", got, want)
		}
		want := &plantstore.Task{MessageID: ev.MessageID, SubscriptionID: sub.ID, Owner: "alice", PlantID: 9,
			Payload: p.WebhookPayload(), CreatedAt: ev.CreatedAt, Subscription: rotated}
		if diff := cmp.Diff(want, tasks[0], equateTime, ignoreTaskDispatch); diff != "" {
			t.Fatalf("claimed task (-want +got):\n%s", diff)
		}
	})

	// A new delivery is due at its event's time, not before. The time is a
	// whole microsecond, so that no rounding moves it.
	t.Run("DueAtEventTime", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		at := fixedNow.Truncate(time.Microsecond)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: at})
		if got := claimDeliveries(t, b, at.Add(-time.Microsecond), at.Add(time.Minute), 10); len(got) != 0 {
			t.Fatalf("claimed %d deliveries before their time, want 0", len(got))
		}
		if got := claimDeliveries(t, b, at, at.Add(time.Minute), 10); len(got) != 1 {
			t.Fatalf("claimed %d deliveries at their time, want 1", len(got))
		}
	})

	t.Run("EarliestFirst", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		for _, p := range []struct {
			id int64
			at time.Duration
		}{{1, 2 * time.Second}, {2, 0}, {3, time.Second}} {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: p.id, Name: "x", CreatedAt: fixedNow.Add(p.at)})
		}
		var ids []int64
		now := fixedNow.Add(time.Minute)
		for range 4 {
			for _, task := range claimDeliveries(t, b, now, now.Add(time.Hour), 1) {
				ids = append(ids, task.PlantID)
			}
		}
		if diff := cmp.Diff([]int64{2, 3, 1}, ids); diff != "" {
			t.Fatalf("plants of the deliveries claimed one at a time (-want +got):\n%s", diff)
		}
	})

	// The lease lasts until leaseUntil, whatever the distance from now.
	t.Run("LeaseUntil", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		now := fixedNow.Add(time.Second)
		until := now.Add(10 * time.Minute)
		if got := claimDeliveries(t, b, now, until, 10); len(got) != 1 {
			t.Fatalf("claimed %d deliveries, want 1", len(got))
		}
		if got := claimDeliveries(t, b, until.Add(-time.Millisecond), until.Add(time.Hour), 10); len(got) != 0 {
			t.Fatalf("claimed %d deliveries before the lease ends, want 0", len(got))
		}
		if got := claimDeliveries(t, b, until.Add(time.Millisecond), until.Add(time.Hour), 10); len(got) != 1 {
			t.Fatalf("claimed %d deliveries after the lease, want 1", len(got))
		}
	})

	t.Run("Limit", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		for id := range int64(5) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		now := fixedNow.Add(time.Second)
		var got []int
		for range 4 {
			got = append(got, len(claimDeliveries(t, b, now, now.Add(time.Hour), 2)))
		}
		if diff := cmp.Diff([]int{2, 2, 1, 0}, got); diff != "" {
			t.Fatalf("deliveries per claim of 2 (-want +got):\n%s", diff)
		}
	})

	// Concurrent claims never return the same delivery.
	t.Run("ConcurrentClaims", func(t *testing.T) {
		const n, claimers = 40, 4
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		insertSubscription(t, b, "alice", fixedNow, nil)
		for id := range int64(n) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		now := fixedNow.Add(time.Second)
		claimed := make([][]*plantstore.Task, claimers)
		errs := make([]error, claimers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range claimers {
			wg.Go(func() {
				<-start
				for {
					tasks, err := b.ClaimDeliveries(t.Context(), now, now.Add(time.Hour), 3)
					if err != nil {
						errs[w] = err
						return
					}
					if len(tasks) == 0 {
						return
					}
					claimed[w] = append(claimed[w], tasks...)
				}
			})
		}
		close(start)
		wg.Wait()
		seen := map[string]int{}
		for w := range claimers {
			if errs[w] != nil {
				t.Fatalf("claimer %d: %v", w, errs[w])
			}
			for _, task := range claimed[w] {
				key := task.MessageID + " " + task.SubscriptionID
				if prev, ok := seen[key]; ok {
					t.Fatalf("delivery %s claimed by claimer %d and claimer %d", key, prev, w)
				}
				seen[key] = w
				if task.Subscription == nil || task.Subscription.ID != task.SubscriptionID {
					t.Fatalf("delivery %s claimed with Subscription %+v", key, task.Subscription)
				}
			}
		}
		if got, want := len(seen), 2*n; got != want {
			t.Fatalf("%d deliveries claimed, want %d", got, want)
		}
	})

	// CompleteDelivery stores the attempt as given.
	t.Run("CompleteDelivery", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 4, Name: "Fern", CreatedAt: fixedNow})
		now := fixedNow.Add(time.Second)
		task := claimDeliveries(t, b, now, now.Add(time.Minute), 10)[0]
		attemptedAt := now.Add(time.Second).In(elsewhere)
		next := now.Add(time.Hour).In(elsewhere)
		completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: attemptedAt, StatusCode: 503, Error: "",
			Duration: 1234 * time.Microsecond, State: plantstore.DeliveryPending, NextAttemptAt: &next})
		want := []*plantstore.Attempt{{MessageID: task.MessageID, PlantID: 4, Attempt: 1, AttemptedAt: attemptedAt, StatusCode: 503,
			Duration: 1234 * time.Microsecond, State: plantstore.DeliveryPending, NextAttemptAt: &next, SubscriptionID: sub.ID}}
		if diff := cmp.Diff(want, listAttempts(t, b, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("ListAttempts (-want +got):\n%s", diff)
		}
		// Due again at next, with the attempt counted.
		if got := claimDeliveries(t, b, next.Add(-time.Millisecond), next.Add(time.Hour), 10); len(got) != 0 {
			t.Fatalf("claimed %d deliveries before their next attempt, want 0", len(got))
		}
		again := claimDeliveries(t, b, next, next.Add(time.Minute), 10)
		if len(again) != 1 || again[0].Attempts != 1 {
			t.Fatalf("at the next attempt claimed %d deliveries (%+v), want the one with Attempts 1", len(again), again)
		}
		completeDelivery(t, b, again[0], plantstore.AttemptResult{AttemptedAt: next, StatusCode: 200, State: plantstore.DeliverySucceeded})
		// No longer pending: left alone.
		completeDelivery(t, b, again[0], plantstore.AttemptResult{AttemptedAt: next.Add(time.Second), Error: "late", State: plantstore.DeliveryFailed})
		if got, want := len(listAttempts(t, b, "alice", sub.ID)), 2; got != want {
			t.Fatalf("%d attempts, want %d", got, want)
		}
		if n, _ := storeOutboxStats(t, b); n != 0 {
			t.Fatalf("%d pending after success, want 0", n)
		}
	})

	// Disable sets the subscription's DisabledAt to r.AttemptedAt (the
	// store has no clock) and fails its other pending deliveries.
	t.Run("DisableAtAttemptTime", func(t *testing.T) {
		b := bs.Open(t)
		gone := insertSubscription(t, b, "alice", fixedNow, nil)
		kept := insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow})
		now := fixedNow.Add(time.Second)
		var task *plantstore.Task
		for _, tk := range claimDeliveries(t, b, now, now.Add(time.Minute), 10) {
			if tk.SubscriptionID == gone.ID {
				task = tk
				break
			}
		}
		if task == nil {
			t.Fatal("no delivery claimed for the subscription")
		}
		attemptedAt := fixedNow.Add(-time.Hour).In(elsewhere) // long ago: only the caller's time will do
		completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: attemptedAt, StatusCode: 410, State: plantstore.DeliveryFailed, Disable: true})
		want := *gone
		want.DisabledAt = &attemptedAt
		if diff := cmp.Diff(&want, storeSubscription(t, b, "alice", gone.ID), equateTime); diff != "" {
			t.Fatalf("disabled subscription (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(kept, storeSubscription(t, b, "alice", kept.ID), equateTime); diff != "" {
			t.Fatalf("the other subscription (-want +got):\n%s", diff)
		}
		if n, _ := storeOutboxStats(t, b); n != 2 {
			t.Fatalf("%d pending after disabling, want 2 (the other subscription's)", n)
		}
		for _, tk := range claimDeliveries(t, b, now.Add(time.Hour), now.Add(2*time.Hour), 10) {
			if tk.SubscriptionID != kept.ID {
				t.Fatalf("claimed a delivery of the disabled subscription: %+v", tk)
			}
		}
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Moss", CreatedAt: now})
		if n, _ := storeOutboxStats(t, b); n != 3 {
			t.Fatalf("%d pending after an insert, want 3 (none for the disabled subscription)", n)
		}
	})

	t.Run("CompleteAfterDelete", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		now := fixedNow.Add(time.Second)
		tasks := claimDeliveries(t, b, now, now.Add(time.Minute), 10)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d deliveries, want 1", len(tasks))
		}
		if err := b.DeleteSubscription(t.Context(), "alice", sub.ID); err != nil {
			t.Fatal(err)
		}
		for _, r := range []plantstore.AttemptResult{
			{AttemptedAt: now, StatusCode: 200, State: plantstore.DeliverySucceeded},
			{AttemptedAt: now, StatusCode: 410, State: plantstore.DeliveryFailed, Disable: true},
		} {
			if err := b.CompleteDelivery(t.Context(), tasks[0], r); err != nil {
				t.Fatalf("CompleteDelivery (%s) after delete: %v", r.State, err)
			}
		}
		if n, _ := storeOutboxStats(t, b); n != 0 {
			t.Fatalf("%d pending, want 0", n)
		}
		if got := listSubscriptions(t, b, "alice"); len(got) != 0 {
			t.Fatalf("%d subscriptions after delete, want 0", len(got))
		}
	})
}
