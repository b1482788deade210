package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// The cases of this file call the backend's OutboxStore directly. Claims
// are timed by the database's clock, which the suite does not control: a
// delivery is made due or not by the time written with it (fixedNow is long
// past; time.Now() plus a little is the near future), and a lease ends when
// its real duration has passed.

// waitClaim claims (as claimDeliveries) until a claim returns a delivery
// or 10 s have passed.
func waitClaim(t *testing.T, b plantstore.Backend, limit int) []*plantstore.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tasks := claimDeliveries(t, b, limit); len(tasks) > 0 || time.Now().After(deadline) {
			return tasks
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// owners counts tasks per owner.
func owners(tasks []*plantstore.Task) map[string]int {
	n := map[string]int{}
	for _, t := range tasks {
		n[t.Owner]++
	}
	return n
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
		tasks := claimDeliveries(t, b, 10)
		if got, want := len(tasks), 1; got != want {
			t.Fatalf("claimed %d deliveries, want %d", got, want)
		}
		want := &plantstore.Task{MessageID: ev.MessageID(), SubscriptionID: sub.ID, Owner: "alice",
			Event: *ev, CreatedAt: ev.CreatedAt, Subscription: rotated}
		want.Event.Seq, want.Event.PlantCreatedAt, want.Event.PlantUpdatedAt = 1, p.CreatedAt, p.CreatedAt
		if diff := cmp.Diff(want, tasks[0], equateTime, ignoreTaskDispatch); diff != "" {
			t.Fatalf("claimed task (-want +got):\n%s", diff)
		}
	})

	// A new delivery is due at its event's time by the database's clock:
	// not before.
	t.Run("DueByDatabaseClock", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Later", CreatedAt: time.Now().Add(time.Hour)})
		soon := time.Now().Add(time.Second)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Soon", CreatedAt: soon})
		if got := claimDeliveries(t, b, 10); len(got) != 0 {
			t.Fatalf("claimed %d deliveries before their time, want 0", len(got))
		}
		got := waitClaim(t, b, 10)
		if len(got) != 1 || got[0].Event.PlantID != 2 {
			t.Fatalf("claimed %+v once due, want plant 2's delivery", got)
		}
		if time.Now().Before(soon) {
			t.Fatalf("claimed at %v a delivery due at %v", time.Now(), soon)
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
		for range 4 {
			for _, task := range claimDeliveries(t, b, 1) {
				ids = append(ids, task.Event.PlantID)
			}
		}
		if diff := cmp.Diff([]int64{2, 3, 1}, ids); diff != "" {
			t.Fatalf("plants of the deliveries claimed one at a time (-want +got):\n%s", diff)
		}
	})

	// The lease lasts c.Lease by the database's clock: the delivery is out
	// of every claim until then, and claimable again after.
	t.Run("Lease", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow.Add(time.Second)})
		long := claimWith(t, b, plantstore.Claim{Lease: time.Hour, Limit: 1})
		claimedAt := time.Now()
		short := claimWith(t, b, plantstore.Claim{Lease: time.Second, Limit: 1})
		if len(long) != 1 || len(short) != 1 || long[0].Event.PlantID != 1 || short[0].Event.PlantID != 2 {
			t.Fatalf("claimed %v, then %v; want plant 1's delivery, then plant 2's", long, short)
		}
		if got := claimDeliveries(t, b, 10); len(got) != 0 {
			t.Fatalf("claimed %d deliveries during their leases, want 0", len(got))
		}
		again := waitClaim(t, b, 10)
		if len(again) != 1 || again[0].MessageID != short[0].MessageID {
			t.Fatalf("after the short lease claimed %v, want plant 2's delivery again", again)
		}
		if took := time.Since(claimedAt); took < time.Second {
			t.Fatalf("claimed again %v after a lease of 1s", took)
		}
		if got, want := again[0].Attempts, 0; got != want {
			t.Fatalf("Attempts = %d after an expired lease, want %d (no attempt recorded)", got, want)
		}
		if n, _ := storeOutboxStats(t, b); n != 2 {
			t.Fatalf("%d pending while leased, want 2", n)
		}
	})

	t.Run("Limit", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		for id := range int64(5) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		var got []int
		for range 4 {
			got = append(got, len(claimDeliveries(t, b, 2)))
		}
		if diff := cmp.Diff([]int{2, 2, 1, 0}, got); diff != "" {
			t.Fatalf("deliveries per claim of 2 (-want +got):\n%s", diff)
		}
		if got := claimDeliveries(t, b, 0); len(got) != 0 {
			t.Fatalf("claimed %d deliveries with Limit 0", len(got))
		}
	})

	// Concurrent claims never return the same delivery, and together
	// never pass the bounds.
	t.Run("ConcurrentClaims", func(t *testing.T) {
		const n, claimers = 40, 4
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		insertSubscription(t, b, "alice", fixedNow, nil)
		for id := range int64(n) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		claimed := make([][]*plantstore.Task, claimers)
		errs := make([]error, claimers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range claimers {
			wg.Go(func() {
				<-start
				for {
					tasks, err := claimStore(t.Context(), b, plantstore.Claim{Lease: time.Hour, Limit: 3})
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

		// With bounds: whatever the claims race, at most PerOwner leased.
		b = bs.Open(t)
		for range 4 {
			insertSubscription(t, b, "bob", fixedNow, nil)
		}
		for id := range int64(10) {
			mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		var mu sync.Mutex
		total := 0
		for range claimers {
			wg.Go(func() {
				tasks, err := claimStore(t.Context(), b, plantstore.Claim{Lease: time.Hour, Limit: 10, PerSubscription: 2, PerOwner: 5})
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += len(tasks)
				mu.Unlock()
			})
		}
		wg.Wait()
		if total != 5 {
			// Claims that read the same deliveries in flight pick the same
			// deliveries, and only one of them leases each.
			t.Fatalf("%d deliveries leased by %d concurrent claims with PerOwner 5, want 5", total, claimers)
		}
	})

	// CompleteDelivery stores the attempt as given; a pending delivery is
	// due again at its next attempt.
	t.Run("CompleteDelivery", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 4, Name: "Fern", CreatedAt: fixedNow})
		task := claimDeliveries(t, b, 10)[0]
		attemptedAt := fixedNow.Add(time.Second).In(elsewhere)
		next := time.Now().Add(time.Second).In(elsewhere)
		completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: attemptedAt, StatusCode: 503, Error: "",
			Duration: 1234 * time.Microsecond, State: plantstore.DeliveryPending, NextAttemptAt: &next})
		want := []*plantstore.Attempt{{MessageID: task.MessageID, PlantID: 4, Attempt: 1, AttemptedAt: attemptedAt, StatusCode: 503,
			Duration: 1234 * time.Microsecond, State: plantstore.DeliveryPending, NextAttemptAt: &next, SubscriptionID: sub.ID}}
		if diff := cmp.Diff(want, listAttempts(t, b, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("ListAttempts (-want +got):\n%s", diff)
		}
		// Due again at next, with the attempt counted.
		if got := claimDeliveries(t, b, 10); len(got) != 0 {
			t.Fatalf("claimed %d deliveries before their next attempt, want 0", len(got))
		}
		again := waitClaim(t, b, 10)
		if len(again) != 1 || again[0].Attempts != 1 {
			t.Fatalf("at the next attempt claimed %d deliveries (%+v), want the one with Attempts 1", len(again), again)
		}
		completeDelivery(t, b, again[0], plantstore.AttemptResult{AttemptedAt: fixedNow.Add(time.Minute), StatusCode: 200, State: plantstore.DeliverySucceeded})
		// No longer pending: left alone.
		completeDelivery(t, b, again[0], plantstore.AttemptResult{AttemptedAt: fixedNow.Add(2 * time.Minute), Error: "late", State: plantstore.DeliveryFailed})
		if got, want := len(listAttempts(t, b, "alice", sub.ID)), 2; got != want {
			t.Fatalf("%d attempts, want %d", got, want)
		}
		if n, _ := storeOutboxStats(t, b); n != 0 {
			t.Fatalf("%d pending after success, want 0", n)
		}
		// The late failure did not mark it failing.
		if got := storeSubscription(t, b, "alice", sub.ID); got.FailingSince != nil || got.DisabledAt != nil {
			t.Fatalf("subscription after success = %+v, want not failing, enabled", got)
		}
	})

	// Disable sets the subscription's DisabledAt to r.AttemptedAt (the
	// store has no clock for it), with reason gone, and fails its other
	// pending deliveries.
	t.Run("DisableAtAttemptTime", func(t *testing.T) {
		b := bs.Open(t)
		gone := insertSubscription(t, b, "alice", fixedNow, nil)
		kept := insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow})
		var task *plantstore.Task
		for _, tk := range claimDeliveries(t, b, 10) {
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
		want.DisabledAt, want.DisabledReason, want.FailingSince = &attemptedAt, plantstore.DisabledGone, &attemptedAt
		if diff := cmp.Diff(&want, storeSubscription(t, b, "alice", gone.ID), equateTime); diff != "" {
			t.Fatalf("disabled subscription (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(kept, storeSubscription(t, b, "alice", kept.ID), equateTime); diff != "" {
			t.Fatalf("the other subscription (-want +got):\n%s", diff)
		}
		if n, _ := storeOutboxStats(t, b); n != 2 {
			t.Fatalf("%d pending after disabling, want 2 (the other subscription's)", n)
		}
		for _, tk := range claimDeliveries(t, b, 10) {
			if tk.SubscriptionID != kept.ID {
				t.Fatalf("claimed a delivery of the disabled subscription: %+v", tk)
			}
		}
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Moss", CreatedAt: fixedNow})
		if n, _ := storeOutboxStats(t, b); n != 3 {
			t.Fatalf("%d pending after an insert, want 3 (none for the disabled subscription)", n)
		}
	})

	// A failed attempt sets FailingSince once, a successful one clears it;
	// a failed attempt disables the subscription (reason failing) once it
	// has failed since before r.FailingCutoff.
	t.Run("FailingSince", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		other := insertSubscription(t, b, "bob", fixedNow, nil)
		for id := range int64(6) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "x", CreatedAt: fixedNow})
		at := func(h int) time.Time { return fixedNow.Add(time.Duration(h) * time.Hour) }
		// attempt makes one attempt of one of alice's deliveries (bob's is
		// claimed by the first and left leased).
		attempt := func(r plantstore.AttemptResult) {
			t.Helper()
			for _, task := range claimWith(t, b, plantstore.Claim{Lease: time.Hour, Limit: 10, PerSubscription: 1}) {
				if task.Owner == "alice" {
					completeDelivery(t, b, task, r)
					return
				}
			}
			t.Fatal("no delivery of alice's to attempt")
		}
		failing := func(what string, want *time.Time) {
			t.Helper()
			got := storeSubscription(t, b, "alice", sub.ID)
			if diff := cmp.Diff(want, got.FailingSince, equateTime); diff != "" || got.DisabledAt != nil {
				t.Fatalf("%s: FailingSince (-want +got):\n%s\nDisabledAt %v, want nil", what, diff, got.DisabledAt)
			}
		}
		next := ptr(fixedNow) // due again at once
		attempt(plantstore.AttemptResult{AttemptedAt: at(1), StatusCode: 500, State: plantstore.DeliveryPending, NextAttemptAt: next,
			FailingCutoff: at(0)})
		failing("after a failure", ptr(at(1)))
		attempt(plantstore.AttemptResult{AttemptedAt: at(2), Error: "timeout", State: plantstore.DeliveryFailed, FailingCutoff: at(1)})
		failing("after a second failure, the cutoff not passed", ptr(at(1)))
		attempt(plantstore.AttemptResult{AttemptedAt: at(3), StatusCode: 204, State: plantstore.DeliverySucceeded})
		failing("after a success", nil)
		attempt(plantstore.AttemptResult{AttemptedAt: at(4), StatusCode: 503, State: plantstore.DeliveryPending, NextAttemptAt: next})
		failing("after a failure with no cutoff", ptr(at(4)))
		if n, _ := storeOutboxStats(t, b); n != 5 {
			t.Fatalf("%d pending before disabling, want 5", n)
		}
		attempt(plantstore.AttemptResult{AttemptedAt: at(9), StatusCode: 500, State: plantstore.DeliveryPending, NextAttemptAt: next,
			FailingCutoff: at(5)})
		want := *sub
		want.FailingSince, want.DisabledAt, want.DisabledReason = ptr(at(4)), ptr(at(9)), plantstore.DisabledFailing
		if diff := cmp.Diff(&want, storeSubscription(t, b, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("subscription failing since before the cutoff (-want +got):\n%s", diff)
		}
		// Its pending deliveries failed; bob's is untouched.
		if n, _ := storeOutboxStats(t, b); n != 1 {
			t.Fatalf("%d pending after disabling, want 1 (bob's)", n)
		}
		if diff := cmp.Diff(other, storeSubscription(t, b, "bob", other.ID), equateTime); diff != "" {
			t.Fatalf("bob's subscription (-want +got):\n%s", diff)
		}
		// A disabled subscription gets no new deliveries.
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 10, Name: "x", CreatedAt: fixedNow})
		if n, _ := storeOutboxStats(t, b); n != 1 {
			t.Fatalf("%d pending after a create, want 1 (none for the disabled subscription)", n)
		}
	})

	t.Run("CompleteAfterDelete", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		tasks := claimDeliveries(t, b, 10)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d deliveries, want 1", len(tasks))
		}
		if err := b.DeleteSubscription(t.Context(), "alice", sub.ID); err != nil {
			t.Fatal(err)
		}
		for _, r := range []plantstore.AttemptResult{
			{AttemptedAt: fixedNow, StatusCode: 200, State: plantstore.DeliverySucceeded},
			{AttemptedAt: fixedNow, StatusCode: 410, State: plantstore.DeliveryFailed, Disable: true},
			{AttemptedAt: fixedNow, StatusCode: 500, State: plantstore.DeliveryFailed, FailingCutoff: fixedNow.Add(time.Hour)},
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

	// Claims take turns across owners and subscriptions, and hold to the
	// bounds, counting what earlier claims leased.
	t.Run("Fair", func(t *testing.T) {
		b := bs.Open(t)
		var alice []*plantstore.Subscription
		for range 3 {
			alice = append(alice, insertSubscription(t, b, "alice", fixedNow, nil))
		}
		insertSubscription(t, b, "bob", fixedNow, nil)
		insertSubscription(t, b, "carol", fixedNow, nil)
		for id := range int64(4) { // the oldest: 12 deliveries
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow.Add(time.Duration(id) * time.Second)})
		}
		mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "x", CreatedAt: fixedNow.Add(time.Hour)})
		for id := range int64(2) {
			mustInsert(t, b, &plantstore.Plant{Owner: "carol", ID: id, Name: "x", CreatedAt: fixedNow.Add(2 * time.Hour)})
		}
		c := plantstore.Claim{Lease: time.Hour, Limit: 4, PerSubscription: 2, PerOwner: 3}
		// Round one: each owner's first; round two: alice's second
		// subscription before carol's second delivery of one subscription.
		first := claimWith(t, b, c)
		if diff := cmp.Diff(map[string]int{"alice": 2, "bob": 1, "carol": 1}, owners(first)); diff != "" {
			t.Fatalf("first claim of 4, per owner (-want +got):\n%s", diff)
		}
		subs := map[string]bool{}
		for _, task := range first {
			if task.Owner == "alice" {
				subs[task.SubscriptionID] = true
			}
		}
		if len(subs) != 2 {
			t.Fatalf("alice's two deliveries are of %d subscriptions, want 2", len(subs))
		}
		// alice has 2 in flight of 3; carol's subscription 1 of 2.
		c.Limit = 10
		second := claimWith(t, b, c)
		if diff := cmp.Diff(map[string]int{"alice": 1, "carol": 1}, owners(second)); diff != "" {
			t.Fatalf("second claim, per owner (-want +got):\n%s", diff)
		}
		for _, task := range second {
			if task.Owner == "alice" && subs[task.SubscriptionID] {
				t.Fatalf("alice's third delivery is of a subscription with one in flight while another has none")
			}
		}
		if got := claimWith(t, b, c); len(got) != 0 {
			t.Fatalf("a third claim got %v, want none: every owner or subscription with due deliveries is at its bound", owners(got))
		}
		// A completion frees a place.
		for _, task := range first {
			if task.Owner == "alice" {
				completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: fixedNow, StatusCode: 200, State: plantstore.DeliverySucceeded})
				break
			}
		}
		if diff := cmp.Diff(map[string]int{"alice": 1}, owners(claimWith(t, b, c))); diff != "" {
			t.Fatalf("claim after a completion (-want +got):\n%s", diff)
		}
		// PerSubscription alone bounds one subscription.
		b = bs.Open(t)
		insertSubscription(t, b, "dave", fixedNow, nil)
		for id := range int64(5) {
			mustInsert(t, b, &plantstore.Plant{Owner: "dave", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		c = plantstore.Claim{Lease: time.Hour, Limit: 10, PerSubscription: 2}
		if got := len(claimWith(t, b, c)) + len(claimWith(t, b, c)); got != 2 {
			t.Fatalf("two claims with PerSubscription 2 leased %d deliveries of one subscription, want 2", got)
		}
	})

	// An owner with a large backlog to subscriptions at their bound hides
	// no other owner's delivery, however much older its own are.
	t.Run("BacklogHidesNothing", func(t *testing.T) {
		const plants = 400
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		insertSubscription(t, b, "alice", fixedNow, nil)
		insertSubscription(t, b, "bob", fixedNow, nil)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for id := w; id < plants; id += 8 {
					p := &plantstore.Plant{Owner: "alice", ID: int64(id), Name: fmt.Sprint(id), CreatedAt: fixedNow.Add(time.Duration(id) * time.Millisecond)}
					if _, _, err := insertPlant(t.Context(), b, p, newEvent(t, p, p.CreatedAt)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		c := plantstore.Claim{Lease: time.Hour, Limit: 32, PerSubscription: 2, PerOwner: 8}
		if got := owners(claimWith(t, b, c)); got["alice"] != 4 {
			t.Fatalf("first claim: %v, want alice's 4 (2 per subscription)", got)
		}
		mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "x", CreatedAt: time.Now()})
		start := time.Now()
		got := claimWith(t, b, c)
		took := time.Since(start)
		if diff := cmp.Diff(map[string]int{"bob": 1}, owners(got)); diff != "" {
			t.Fatalf("claim with alice's %d deliveries due (-want +got):\n%s", 2*plants-4, diff)
		}
		t.Logf("a claim with %d deliveries due to 2 subscriptions at their bound took %v", 2*plants-4, took)
	})

	// PruneOutbox deletes attempts, then finished deliveries, older than
	// before, at most limit rows a call; pending deliveries and newer rows
	// stay.
	// CountLeased counts the deliveries leased now to one subscription and
	// to its owner, as claims count them (pings count against the same
	// bounds): not the unleased, completed or expired ones, nor
	// another owner's.
	t.Run("CountLeased", func(t *testing.T) {
		b := bs.Open(t)
		a1 := insertSubscription(t, b, "alice", fixedNow, nil)
		a2 := insertSubscription(t, b, "alice", fixedNow, nil)
		bob := insertSubscription(t, b, "bob", fixedNow, nil)
		for id := range int64(3) { // 3 deliveries to each of alice's subscriptions
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "x", CreatedAt: fixedNow})
		count := func(owner, sub string) [2]int {
			t.Helper()
			n, total, err := b.CountLeased(t.Context(), owner, sub)
			if err != nil {
				t.Fatal(err)
			}
			return [2]int{n, total}
		}
		if got := count("alice", a1.ID); got != [2]int{0, 0} {
			t.Fatalf("CountLeased before any claim = %v, want [0 0]", got)
		}
		// Three leased for an hour: one of each of alice's subscriptions
		// (Pick takes turns) and bob's.
		long := claimWith(t, b, plantstore.Claim{Lease: time.Hour, Limit: 3, PerSubscription: 2})
		bySub := map[string]int{}
		for _, task := range long {
			bySub[task.SubscriptionID]++
		}
		if len(long) != 3 || bySub[bob.ID] != 1 {
			t.Fatalf("claimed %v, want 3 deliveries, bob's among them", bySub)
		}
		for _, tt := range []struct {
			owner, sub string
			want       [2]int
		}{
			{"alice", a1.ID, [2]int{bySub[a1.ID], 2}},
			{"alice", a2.ID, [2]int{bySub[a2.ID], 2}},
			{"bob", bob.ID, [2]int{1, 1}},
			{"bob", a1.ID, [2]int{0, 1}}, // another owner's subscription: not counted as bob's
			{"carol", "whk_0000000000000000", [2]int{0, 0}},
		} {
			if got := count(tt.owner, tt.sub); got != tt.want {
				t.Errorf("CountLeased(%s, %s) = %v, want %v", tt.owner, tt.sub, got, tt.want)
			}
		}
		// A completed delivery is no longer counted.
		for _, task := range long {
			if task.Owner == "alice" {
				completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: fixedNow, StatusCode: 200, State: plantstore.DeliverySucceeded})
				if got := count("alice", task.SubscriptionID); got != [2]int{bySub[task.SubscriptionID] - 1, 1} {
					t.Fatalf("CountLeased after a completion = %v, want [%d 1]", got, bySub[task.SubscriptionID]-1)
				}
				break
			}
		}
		// A lease the database's clock has passed is not counted.
		short := claimWith(t, b, plantstore.Claim{Lease: 500 * time.Millisecond, Limit: 10, PerOwner: 2})
		if len(short) != 1 || short[0].Owner != "alice" {
			t.Fatalf("claimed %v with a short lease, want one of alice's", owners(short))
		}
		if got := count("alice", short[0].SubscriptionID)[1]; got != 2 {
			t.Fatalf("alice's leased deliveries = %d during the short lease, want 2", got)
		}
		deadline := time.Now().Add(10 * time.Second)
		for count("alice", short[0].SubscriptionID)[1] != 1 {
			if time.Now().After(deadline) {
				t.Fatal("an expired lease is still counted 10 s later")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	// Claim.Busy (the claimer's pings in flight) counts against both
	// bounds as leased deliveries do.
	t.Run("ClaimCountsBusy", func(t *testing.T) {
		b := bs.Open(t)
		a1 := insertSubscription(t, b, "alice", fixedNow, nil)
		a2 := insertSubscription(t, b, "alice", fixedNow, nil)
		for id := range int64(3) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		c := plantstore.Claim{Lease: time.Hour, Limit: 10, PerSubscription: 2, PerOwner: 3,
			Busy: []plantstore.InFlight{{SubscriptionID: a1.ID, Owner: "alice", N: 1}, {SubscriptionID: a2.ID, Owner: "alice", N: 1}}}
		got := claimWith(t, b, c)
		if len(got) != 1 {
			t.Fatalf("claimed %d deliveries with 2 of alice's 3 places taken by pings, want 1", len(got))
		}
		c.PerOwner = 10
		c.Busy = []plantstore.InFlight{{SubscriptionID: got[0].SubscriptionID, Owner: "alice", N: 1}}
		again := claimWith(t, b, c)
		if len(again) != 2 || again[0].SubscriptionID == got[0].SubscriptionID || again[1].SubscriptionID == got[0].SubscriptionID {
			t.Fatalf("claimed %d more, want 2 of the other subscription (the first has a delivery and a ping in flight)", len(again))
		}
	})

	t.Run("PruneOutbox", func(t *testing.T) {
		b := bs.Open(t)
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		for id := range int64(4) {
			mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		old := fixedNow.Add(time.Minute)
		for _, task := range claimDeliveries(t, b, 10) {
			switch task.Event.PlantID {
			case 0:
				completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: old, StatusCode: 200, State: plantstore.DeliverySucceeded})
			case 1:
				completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: old, StatusCode: 500, State: plantstore.DeliveryFailed})
			case 2: // pending, with an old attempt
				completeDelivery(t, b, task, plantstore.AttemptResult{AttemptedAt: old, StatusCode: 500, State: plantstore.DeliveryPending,
					NextAttemptAt: ptr(time.Now().Add(time.Hour))})
			} // 3: leased, no attempt
		}
		recent := fixedNow.Add(2 * time.Hour)
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 9, Name: "new", CreatedAt: recent})
		task := claimDeliveries(t, b, 10)
		if len(task) != 1 {
			t.Fatalf("claimed %d deliveries, want the new plant's", len(task))
		}
		completeDelivery(t, b, task[0], plantstore.AttemptResult{AttemptedAt: recent, StatusCode: 200, State: plantstore.DeliverySucceeded})

		// 3 old attempts and 2 old finished deliveries, by 2.
		var got []int
		for range 4 {
			n, err := b.PruneOutbox(t.Context(), fixedNow.Add(time.Hour), 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		if diff := cmp.Diff([]int{2, 2, 1, 0}, got); diff != "" {
			t.Fatalf("rows pruned per call of 2 (-want +got):\n%s", diff)
		}
		attempts := listAttempts(t, b, "alice", sub.ID)
		if len(attempts) != 1 || attempts[0].PlantID != 9 {
			t.Fatalf("attempts left %+v, want the new plant's only", attempts)
		}
		if n, _ := storeOutboxStats(t, b); n != 2 {
			t.Fatalf("%d pending after pruning, want 2 (never pruned)", n)
		}
		// The rest goes with a later before.
		n, err := b.PruneOutbox(t.Context(), recent.Add(time.Second), 100)
		if err != nil || n != 2 {
			t.Fatalf("PruneOutbox of the rest = %d, %v; want 2 (the new attempt and delivery)", n, err)
		}
		if n, _ := storeOutboxStats(t, b); n != 2 {
			t.Fatalf("%d pending after pruning, want 2", n)
		}
	})
}
