package storetest

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// newSubscription stores a subscription of owner created at createdAt,
// disabled if disabled.
func newSubscription(t *testing.T, s plantstore.Store, owner string, createdAt time.Time, disabled bool) *plantstore.Subscription {
	t.Helper()
	sub, err := plantstore.NewSubscription(owner, "https://example.com/hooks/"+owner, "desc of "+owner, createdAt)
	if err != nil {
		t.Fatal(err)
	}
	if disabled {
		sub.DisabledAt = ptr(createdAt.Add(time.Second))
	}
	if err := s.CreateSubscription(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

func outboxPending(t *testing.T, s plantstore.Store) (int, time.Time) {
	t.Helper()
	n, oldest, err := s.OutboxStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n, oldest
}

func claim(t *testing.T, s plantstore.Store, now time.Time, lease time.Duration, limit int) []*plantstore.Task {
	t.Helper()
	tasks, err := s.ClaimTasks(t.Context(), now, lease, limit)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

func checkCode(t *testing.T, what string, err error, want int32) {
	t.Helper()
	if got := plantstore.ErrorCode(err); got != want {
		t.Fatalf("%s: error %v (code %d), want code %d", what, err, got, want)
	}
}

func testSubscriptions(t *testing.T, open func(t *testing.T) plantstore.Store) {
	t.Run("CRUDAndOwnership", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		second := newSubscription(t, s, "alice", fixedNow.Add(time.Hour), false)
		first := newSubscription(t, s, "alice", fixedNow, true)
		newSubscription(t, s, "bob", fixedNow, false)

		got, err := s.FindSubscriptionByID(ctx, "alice", first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, got, equateTime); diff != "" {
			t.Fatalf("FindSubscriptionByID (-want +got):\n%s", diff)
		}
		list, err := s.FindSubscriptions(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]*plantstore.Subscription{first, second}, list, equateTime); diff != "" {
			t.Fatalf("FindSubscriptions, oldest first (-want +got):\n%s", diff)
		}
		if list, err := s.FindSubscriptions(ctx, "carol"); err != nil || len(list) != 0 {
			t.Fatalf("FindSubscriptions(carol) = %v, %v; want none", list, err)
		}

		// Another owner sees none of alice's subscriptions.
		_, err = s.FindSubscriptionByID(ctx, "bob", first.ID)
		checkCode(t, "FindSubscriptionByID by bob", err, plantstore.CodeWebhookNotFound)
		_, err = s.FindAttempts(ctx, "bob", first.ID, 10)
		checkCode(t, "FindAttempts by bob", err, plantstore.CodeWebhookNotFound)
		_, err = s.RotateSecret(ctx, "bob", first.ID, "whsec_x", fixedNow)
		checkCode(t, "RotateSecret by bob", err, plantstore.CodeWebhookNotFound)
		checkCode(t, "DeleteSubscription by bob", s.DeleteSubscription(ctx, "bob", first.ID), plantstore.CodeWebhookNotFound)

		attempts, err := s.FindAttempts(ctx, "alice", first.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 0 {
			t.Fatalf("FindAttempts of a new subscription = %v, want none", attempts)
		}

		if err := s.DeleteSubscription(ctx, "alice", first.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.FindSubscriptionByID(ctx, "alice", first.ID)
		checkCode(t, "FindSubscriptionByID after delete", err, plantstore.CodeWebhookNotFound)
		checkCode(t, "DeleteSubscription twice", s.DeleteSubscription(ctx, "alice", first.ID), plantstore.CodeWebhookNotFound)
		list, err = s.FindSubscriptions(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(list), 1; got != want {
			t.Fatalf("%d subscriptions after delete, want %d", got, want)
		}
	})

	t.Run("RotateSecret", func(t *testing.T) {
		s := open(t)
		sub := newSubscription(t, s, "alice", fixedNow, false)
		until := fixedNow.Add(plantstore.SecretRotationGrace)
		got, err := s.RotateSecret(t.Context(), "alice", sub.ID, "whsec_new", until)
		if err != nil {
			t.Fatal(err)
		}
		want := *sub
		want.Secret, want.PreviousSecret, want.PreviousSecretUntil = "whsec_new", sub.Secret, &until
		if diff := cmp.Diff(&want, got, equateTime); diff != "" {
			t.Fatalf("RotateSecret returned (-want +got):\n%s", diff)
		}
		stored, err := s.FindSubscriptionByID(t.Context(), "alice", sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, stored, equateTime); diff != "" {
			t.Fatalf("stored after rotation (-want +got):\n%s", diff)
		}
		_, err = s.RotateSecret(t.Context(), "alice", "whk_unknown", "whsec_x", until)
		checkCode(t, "RotateSecret of an unknown id", err, plantstore.CodeWebhookNotFound)
	})
}

func testOutbox(t *testing.T, open func(t *testing.T) plantstore.Store) {
	t.Run("FanOut", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		a := newSubscription(t, s, "alice", fixedNow, false)
		b := newSubscription(t, s, "alice", fixedNow.Add(time.Second), false)
		newSubscription(t, s, "alice", fixedNow.Add(2*time.Second), true) // disabled: no delivery
		if n, oldest := outboxPending(t, s); n != 0 || !oldest.IsZero() {
			t.Fatalf("OutboxStats of an empty outbox = %d, %v; want 0, zero time", n, oldest)
		}

		before := time.Now()
		stored := mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Fern", Tag: ptr("green")})
		after := time.Now()
		// Neither a replay, nor a conflict, nor another owner's create
		// (bob has no subscription) writes to the outbox.
		if _, created, err := s.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Fern", Tag: ptr("green")}); err != nil || created {
			t.Fatalf("replay: created = %v, err = %v", created, err)
		}
		_, _, err := s.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Moss"})
		checkCode(t, "conflicting create", err, plantstore.CodeConflict)
		mustCreate(t, s, &plantstore.Plant{Owner: "bob", ID: 7, Name: "Fern"})

		n, oldest := outboxPending(t, s)
		if got, want := n, 2; got != want {
			t.Fatalf("%d pending deliveries, want %d (one per enabled subscription)", got, want)
		}
		checkTimeBetween(t, "oldest pending", oldest, before, after)

		now := time.Now()
		tasks := claim(t, s, now, time.Minute, 10)
		if got, want := len(tasks), 2; got != want {
			t.Fatalf("claimed %d tasks, want %d", got, want)
		}
		sort.Slice(tasks, func(i, j int) bool { return tasks[i].SubscriptionID < tasks[j].SubscriptionID })
		subs := []*plantstore.Subscription{a, b}
		sort.Slice(subs, func(i, j int) bool { return subs[i].ID < subs[j].ID })
		if tasks[0].MessageID == "" || tasks[0].MessageID != tasks[1].MessageID {
			t.Fatalf("message ids %q and %q, want one shared id", tasks[0].MessageID, tasks[1].MessageID)
		}
		for i, task := range tasks {
			checkTimeBetween(t, "task CreatedAt", task.CreatedAt, before, after)
			want := &plantstore.Task{
				MessageID:      tasks[0].MessageID,
				SubscriptionID: subs[i].ID,
				Owner:          "alice",
				PlantID:        7,
				Payload:        stored.WebhookPayload(),
				URL:            subs[i].URL,
				Secrets:        []string{subs[i].Secret},
				Attempts:       0,
				CreatedAt:      task.CreatedAt,
			}
			if diff := cmp.Diff(want, task); diff != "" {
				t.Fatalf("task %d (-want +got):\n%s", i, diff)
			}
		}
		if got, want := string(tasks[0].Payload), `{"id":7,"name":"Fern","tag":"green"}`; got != want {
			t.Fatalf("payload = %s, want %s", got, want)
		}
	})

	t.Run("SecretsDuringRotation", func(t *testing.T) {
		s := open(t)
		sub := newSubscription(t, s, "alice", fixedNow, false)
		now := time.Now()
		if _, err := s.RotateSecret(t.Context(), "alice", sub.ID, "whsec_new", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		tasks := claim(t, s, time.Now(), time.Minute, 10)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d tasks, want 1", len(tasks))
		}
		if diff := cmp.Diff([]string{"whsec_new", sub.Secret}, tasks[0].Secrets); diff != "" {
			t.Fatalf("Secrets during the grace period (-want +got):\n%s", diff)
		}
	})

	t.Run("Lease", func(t *testing.T) {
		s := open(t)
		newSubscription(t, s, "alice", fixedNow, false)
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		now := time.Now()
		if got := claim(t, s, now.Add(-time.Hour), time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks not yet due, want 0", len(got))
		}
		first := claim(t, s, now, time.Minute, 10)
		if len(first) != 1 {
			t.Fatalf("claimed %d tasks, want 1", len(first))
		}
		if got := claim(t, s, now.Add(30*time.Second), time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks during the lease, want 0", len(got))
		}
		again := claim(t, s, now.Add(time.Minute+time.Millisecond), time.Minute, 10)
		if len(again) != 1 || again[0].MessageID != first[0].MessageID {
			t.Fatalf("after the lease claimed %v, want the same delivery again", again)
		}
		if n, _ := outboxPending(t, s); n != 1 {
			t.Fatalf("%d pending while leased, want 1", n)
		}
	})

	t.Run("CompleteTask", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		sub := newSubscription(t, s, "alice", fixedNow, false)
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Fern"})
		now := time.Now()
		task := claim(t, s, now, time.Minute, 10)[0]

		retryAt := now.Add(time.Hour)
		first := plantstore.AttemptResult{AttemptedAt: now, StatusCode: 500, Duration: 1500 * time.Microsecond,
			State: plantstore.DeliveryPending, NextAttemptAt: &retryAt}
		if err := s.CompleteTask(ctx, task, first); err != nil {
			t.Fatal(err)
		}
		// Released, but not due before its next attempt.
		if got := claim(t, s, now.Add(30*time.Minute), time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks before the retry time, want 0", len(got))
		}
		retry := claim(t, s, retryAt.Add(time.Millisecond), time.Minute, 10)
		if len(retry) != 1 || retry[0].MessageID != task.MessageID {
			t.Fatalf("at the retry time claimed %v, want the delivery", retry)
		}
		if got, want := retry[0].Attempts, 1; got != want {
			t.Fatalf("Attempts = %d, want %d", got, want)
		}
		secondAt := retryAt.Add(2 * time.Millisecond)
		second := plantstore.AttemptResult{AttemptedAt: secondAt, Error: "connection refused", Duration: 2 * time.Millisecond,
			State: plantstore.DeliveryFailed}
		if err := s.CompleteTask(ctx, retry[0], plantstore.AttemptResult{AttemptedAt: secondAt, StatusCode: 204,
			Duration: time.Millisecond, State: plantstore.DeliverySucceeded}); err != nil {
			t.Fatal(err)
		}
		// Completing a delivery no longer pending changes nothing.
		if err := s.CompleteTask(ctx, retry[0], second); err != nil {
			t.Fatalf("CompleteTask of a completed delivery: %v", err)
		}
		if n, oldest := outboxPending(t, s); n != 0 || !oldest.IsZero() {
			t.Fatalf("OutboxStats after success = %d, %v; want 0, zero time", n, oldest)
		}
		if got := claim(t, s, secondAt.Add(time.Hour), time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks after success, want 0", len(got))
		}

		attempts, err := s.FindAttempts(ctx, "alice", sub.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []*plantstore.Attempt{
			{MessageID: task.MessageID, PlantID: 3, Attempt: 2, AttemptedAt: secondAt, StatusCode: 204,
				Duration: time.Millisecond, State: plantstore.DeliverySucceeded, SubscriptionID: sub.ID},
			{MessageID: task.MessageID, PlantID: 3, Attempt: 1, AttemptedAt: now, StatusCode: 500,
				Duration: 1500 * time.Microsecond, State: plantstore.DeliveryPending, NextAttemptAt: &retryAt, SubscriptionID: sub.ID},
		}
		if diff := cmp.Diff(want, attempts, equateTime); diff != "" {
			t.Fatalf("FindAttempts, newest first (-want +got):\n%s", diff)
		}
		limited, err := s.FindAttempts(ctx, "alice", sub.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[:1], limited, equateTime); diff != "" {
			t.Fatalf("FindAttempts with limit 1 (-want +got):\n%s", diff)
		}
	})

	t.Run("ErrorWithoutStatus", func(t *testing.T) {
		s := open(t)
		sub := newSubscription(t, s, "alice", fixedNow, false)
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Fern"})
		now := time.Now()
		task := claim(t, s, now, time.Minute, 10)[0]
		if err := s.CompleteTask(t.Context(), task, plantstore.AttemptResult{AttemptedAt: now, Error: "timeout",
			Duration: 15 * time.Second, State: plantstore.DeliveryFailed}); err != nil {
			t.Fatal(err)
		}
		attempts, err := s.FindAttempts(t.Context(), "alice", sub.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []*plantstore.Attempt{{MessageID: task.MessageID, PlantID: 3, Attempt: 1, AttemptedAt: now, Error: "timeout",
			Duration: 15 * time.Second, State: plantstore.DeliveryFailed, SubscriptionID: sub.ID}}
		if diff := cmp.Diff(want, attempts, equateTime); diff != "" {
			t.Fatalf("FindAttempts (-want +got):\n%s", diff)
		}
		if n, _ := outboxPending(t, s); n != 0 {
			t.Fatalf("%d pending after failure, want 0", n)
		}
	})

	t.Run("Disable", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		gone := newSubscription(t, s, "alice", fixedNow, false)
		other := newSubscription(t, s, "alice", fixedNow.Add(time.Second), false)
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy"})
		if n, _ := outboxPending(t, s); n != 4 {
			t.Fatalf("%d pending, want 4", n)
		}
		now := time.Now()
		var task *plantstore.Task
		for _, tk := range claim(t, s, now, time.Minute, 10) {
			if tk.SubscriptionID == gone.ID {
				task = tk
				break
			}
		}
		if task == nil {
			t.Fatal("no task claimed for the subscription")
		}
		before := time.Now()
		if err := s.CompleteTask(ctx, task, plantstore.AttemptResult{AttemptedAt: now, StatusCode: 410,
			State: plantstore.DeliveryFailed, Disable: true}); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		got, err := s.FindSubscriptionByID(ctx, "alice", gone.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.DisabledAt == nil {
			t.Fatal("DisabledAt = nil after a 410, want set")
		}
		checkTimeBetween(t, "DisabledAt", *got.DisabledAt, before, after)
		// Its other delivery failed; the other subscription's two remain.
		if n, _ := outboxPending(t, s); n != 2 {
			t.Fatalf("%d pending after disabling, want 2", n)
		}
		for _, tk := range claim(t, s, now.Add(time.Hour), time.Minute, 10) {
			if tk.SubscriptionID != other.ID {
				t.Fatalf("claimed a task of the disabled subscription: %+v", tk)
			}
		}
		// A disabled subscription gets no new deliveries.
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Moss"})
		if n, _ := outboxPending(t, s); n != 3 {
			t.Fatalf("%d pending after a create, want 3", n)
		}
	})

	t.Run("DeleteSubscription", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		sub := newSubscription(t, s, "alice", fixedNow, false)
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		mustCreate(t, s, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy"})
		now := time.Now()
		tasks := claim(t, s, now, time.Minute, 1)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d tasks with limit 1, want 1", len(tasks))
		}
		if err := s.DeleteSubscription(ctx, "alice", sub.ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := outboxPending(t, s); n != 0 {
			t.Fatalf("%d pending after delete, want 0", n)
		}
		// The dispatcher finishing a task of the deleted subscription.
		if err := s.CompleteTask(ctx, tasks[0], plantstore.AttemptResult{AttemptedAt: now, StatusCode: 200,
			State: plantstore.DeliverySucceeded}); err != nil {
			t.Fatalf("CompleteTask after delete: %v", err)
		}
		if got := claim(t, s, now.Add(time.Hour), time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks after delete, want 0", len(got))
		}
	})

	t.Run("ConcurrentCreatesAndClaims", func(t *testing.T) {
		const n = 50
		s := open(t)
		sub := newSubscription(t, s, "alice", fixedNow, false)
		// Concurrent creates: on backends with group commit these share
		// transactions, whose path must write the outbox too.
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = s.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: int64(i), Name: fmt.Sprintf("plant %d", i)})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
		}
		if got, _ := outboxPending(t, s); got != n {
			t.Fatalf("%d pending, want %d", got, n)
		}

		now := time.Now()
		claimed := make([][]*plantstore.Task, 2)
		claimErrs := make([]error, 2)
		start := make(chan struct{})
		for w := range 2 {
			wg.Go(func() {
				<-start
				for {
					tasks, err := s.ClaimTasks(t.Context(), now, time.Hour, 3)
					if err != nil {
						claimErrs[w] = err
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
		for _, err := range claimErrs {
			if err != nil {
				t.Fatal(err)
			}
		}
		seen := map[int64]int{}
		messages := map[string]bool{}
		for w, tasks := range claimed {
			for _, task := range tasks {
				if prev, ok := seen[task.PlantID]; ok {
					t.Fatalf("plant %d claimed by claimer %d and claimer %d", task.PlantID, prev, w)
				}
				seen[task.PlantID] = w
				messages[task.MessageID] = true
				if task.SubscriptionID != sub.ID {
					t.Fatalf("task of subscription %s, want %s", task.SubscriptionID, sub.ID)
				}
				want := (&plantstore.Plant{ID: task.PlantID, Name: fmt.Sprintf("plant %d", task.PlantID)}).WebhookPayload()
				if got := string(task.Payload); got != string(want) {
					t.Fatalf("payload %s, want %s", got, want)
				}
			}
		}
		if got := len(seen); got != n {
			t.Fatalf("%d deliveries claimed, want %d", got, n)
		}
		if got := len(messages); got != n {
			t.Fatalf("%d distinct message ids, want %d (one per plant)", got, n)
		}
	})
}
