package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/service"
)

// The cases of this file run through the service (WebhookService, and
// OutboxService as the dispatcher sees it).

// createSubscription creates a subscription of owner through the service.
func createSubscription(t *testing.T, svc *service.Services, owner string) *plantstore.Subscription {
	t.Helper()
	sub, err := svc.Webhooks.CreateSubscription(t.Context(), owner, "http://127.0.0.1:9/hooks/"+owner, "desc of "+owner)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// outboxStats returns the pending deliveries and the creation time of the
// oldest, through the service.
func outboxStats(t *testing.T, svc *service.Services) (int, time.Time) {
	t.Helper()
	n, oldest, err := svc.Outbox.OutboxStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n, oldest
}

// claim leases up to limit due tasks for lease through the service, with
// no bound per subscription or owner.
func claim(t *testing.T, svc *service.Services, lease time.Duration, limit int) []*plantstore.Task {
	t.Helper()
	tasks, err := svc.Outbox.ClaimDeliveries(t.Context(), plantstore.Claim{Lease: lease, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// waitTasks claims (as claim, for a minute) until a claim returns a task
// or 10 s have passed.
func waitTasks(t *testing.T, svc *service.Services) []*plantstore.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tasks := claim(t, svc, time.Minute, 10); len(tasks) > 0 || time.Now().After(deadline) {
			return tasks
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// findSubscriptions returns every subscription of owner through the
// service (one page of the most).
func findSubscriptions(t *testing.T, svc *service.Services, owner string) []*plantstore.Subscription {
	t.Helper()
	subs, more, err := svc.Webhooks.FindSubscriptions(t.Context(), plantstore.SubscriptionFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if more {
		t.Fatalf("FindSubscriptions(%s): more than a page", owner)
	}
	return subs
}

// complete records an attempt through the service.
func complete(t *testing.T, svc *service.Services, task *plantstore.Task, r plantstore.AttemptResult) {
	t.Helper()
	if err := svc.Outbox.CompleteDelivery(t.Context(), task, r); err != nil {
		t.Fatal(err)
	}
}

// findAttempts lists a subscription's attempts through the service.
func findAttempts(t *testing.T, svc *service.Services, owner, id string) []*plantstore.Attempt {
	t.Helper()
	attempts, _, err := svc.Webhooks.FindAttempts(t.Context(), plantstore.AttemptFilter{Owner: owner, SubscriptionID: id})
	if err != nil {
		t.Fatal(err)
	}
	return attempts
}

// findSubscription returns the owner's subscription through the service.
func findSubscription(t *testing.T, svc *service.Services, owner, id string) *plantstore.Subscription {
	t.Helper()
	sub, err := svc.Webhooks.FindSubscriptionByID(t.Context(), owner, id)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func testSubscriptions(t *testing.T, bs Backends) {
	t.Run("CRUDAndOwnership", func(t *testing.T) {
		c := newClock(fixedNow.Add(time.Hour))
		_, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		second := createSubscription(t, svc, "alice")
		c.Set(fixedNow)
		first := createSubscription(t, svc, "alice")
		createSubscription(t, svc, "bob")

		if !strings.HasPrefix(first.ID, "whk_") || !strings.HasPrefix(first.Secret, "whsec_") || first.ID == second.ID || first.Secret == second.Secret {
			t.Fatalf("subscriptions %s (secret %q) and %s: want distinct whk_ ids and whsec_ secrets", first.ID, first.Secret, second.ID)
		}
		want := &plantstore.Subscription{ID: first.ID, Owner: "alice", URL: "http://127.0.0.1:9/hooks/alice",
			Description: "desc of alice", Secret: first.Secret, CreatedAt: fixedNow}
		if diff := cmp.Diff(want, first, equateTime); diff != "" {
			t.Fatalf("CreateSubscription returned (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(first, findSubscription(t, svc, "alice", first.ID), equateTime); diff != "" {
			t.Fatalf("FindSubscriptionByID (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]*plantstore.Subscription{first, second}, findSubscriptions(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("FindSubscriptions, oldest first (-want +got):\n%s", diff)
		}
		if list := findSubscriptions(t, svc, "carol"); len(list) != 0 {
			t.Fatalf("FindSubscriptions(carol) = %v; want none", list)
		}

		// Another owner sees none of alice's subscriptions, and an unknown
		// id is nobody's.
		var err error
		for _, tt := range []struct{ owner, id string }{{"bob", first.ID}, {"Alice", first.ID}, {"alice", "whk_0000000000000000"}} {
			what := fmt.Sprintf("%s's %s", tt.owner, tt.id)
			_, err = svc.Webhooks.FindSubscriptionByID(ctx, tt.owner, tt.id)
			checkCode(t, "FindSubscriptionByID of "+what, err, plantstore.CodeWebhookNotFound)
			_, _, err = svc.Webhooks.FindAttempts(ctx, plantstore.AttemptFilter{Owner: tt.owner, SubscriptionID: tt.id})
			checkCode(t, "FindAttempts of "+what, err, plantstore.CodeWebhookNotFound)
			_, err = svc.Webhooks.RotateSecret(ctx, tt.owner, tt.id, nil)
			checkCode(t, "RotateSecret of "+what, err, plantstore.CodeWebhookNotFound)
			checkCode(t, "DeleteSubscription of "+what, svc.Webhooks.DeleteSubscription(ctx, tt.owner, tt.id), plantstore.CodeWebhookNotFound)
		}
		if diff := cmp.Diff(first, findSubscription(t, svc, "alice", first.ID), equateTime); diff != "" {
			t.Fatalf("alice's subscription after the others' calls (-want +got):\n%s", diff)
		}

		if attempts := findAttempts(t, svc, "alice", first.ID); len(attempts) != 0 {
			t.Fatalf("FindAttempts of a new subscription = %v, want none", attempts)
		}

		if err := svc.Webhooks.DeleteSubscription(ctx, "alice", first.ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Webhooks.FindSubscriptionByID(ctx, "alice", first.ID)
		checkCode(t, "FindSubscriptionByID after delete", err, plantstore.CodeWebhookNotFound)
		checkCode(t, "DeleteSubscription twice", svc.Webhooks.DeleteSubscription(ctx, "alice", first.ID), plantstore.CodeWebhookNotFound)
		if diff := cmp.Diff([]*plantstore.Subscription{second}, findSubscriptions(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("FindSubscriptions after delete (-want +got):\n%s", diff)
		}
	})

	t.Run("Longest", func(t *testing.T) {
		svc := openServices(t, bs)
		url := "http://127.0.0.1:9/" + strings.Repeat("p", plantstore.MaxWebhookURLLength-len("http://127.0.0.1:9/"))
		desc := strings.Repeat("🌿", plantstore.MaxWebhookDescriptionLength)
		sub, err := svc.Webhooks.CreateSubscription(t.Context(), "alice", url, desc)
		if err != nil {
			t.Fatal(err)
		}
		got := findSubscription(t, svc, "alice", sub.ID)
		if got.URL != url || got.Description != desc {
			t.Fatalf("read back URL of %d bytes and description %q, want what was stored", len(got.URL), got.Description)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		svc := openServices(t, bs)
		for _, tt := range []struct {
			name, url, desc string
		}{
			{"EmptyURL", "", ""},
			{"Relative", "/hooks", ""},
			{"Scheme", "ftp://127.0.0.1/hooks", ""},
			{"NoHost", "https:///hooks", ""},
			{"UserInfo", "http://user:pw@127.0.0.1:9/hooks", ""},
			{"Space", "http://127.0.0.1:9/a b", ""},
			{"URLTooLong", "http://127.0.0.1:9/" + strings.Repeat("p", plantstore.MaxWebhookURLLength), ""},
			{"DescriptionTooLong", "http://127.0.0.1:9/hooks", strings.Repeat("d", plantstore.MaxWebhookDescriptionLength+1)},
		} {
			t.Run(tt.name, func(t *testing.T) {
				sub, err := svc.Webhooks.CreateSubscription(t.Context(), "alice", tt.url, tt.desc)
				checkCode(t, "CreateSubscription", err, plantstore.CodeInvalidBody)
				if sub != nil {
					t.Fatalf("CreateSubscription returned %+v with an error", sub)
				}
			})
		}
		if list := findSubscriptions(t, svc, "alice"); len(list) != 0 {
			t.Fatalf("FindSubscriptions after invalid creates = %v; want none", list)
		}
	})

	// An owner may have Config.MaxSubscriptions (default 16), disabled ones
	// included: past it, CodeTooManyWebhooks with the number.
	t.Run("ErrTooMany", func(t *testing.T) {
		b, svc := open(t, bs, service.Config{})
		for range plantstore.DefaultMaxSubscriptions - 1 {
			createSubscription(t, svc, "alice")
		}
		insertSubscription(t, b, "alice", fixedNow, ptr(fixedNow)) // disabled: counts
		_, err := svc.Webhooks.CreateSubscription(t.Context(), "alice", "http://127.0.0.1:9/one-more", "")
		checkCode(t, "CreateSubscription past the default cap", err, plantstore.CodeTooManyWebhooks)
		checkIs(t, "CreateSubscription past the default cap", err, plantstore.ErrLimit)
		if got, want := err.(*plantstore.Error).Message, "the owner has 16 webhook subscriptions, the most allowed: delete one first"; got != want {
			t.Fatalf("message %q, want %q", got, want)
		}
		createSubscription(t, svc, "bob") // another owner's count

		_, svc = open(t, bs, service.Config{MaxSubscriptions: 2})
		first := createSubscription(t, svc, "alice")
		createSubscription(t, svc, "alice")
		_, err = svc.Webhooks.CreateSubscription(t.Context(), "alice", "http://127.0.0.1:9/third", "")
		checkCode(t, "CreateSubscription past a cap of 2", err, plantstore.CodeTooManyWebhooks)
		if err := svc.Webhooks.DeleteSubscription(t.Context(), "alice", first.ID); err != nil {
			t.Fatal(err)
		}
		createSubscription(t, svc, "alice")
		if got := len(findSubscriptions(t, svc, "alice")); got != 2 {
			t.Fatalf("alice has %d subscriptions, want 2", got)
		}
	})

	// Ids are "whk_" + 12 hex digits of the creation's Unix milliseconds +
	// 4 random ones: id order is creation order.
	t.Run("IDsByCreationTime", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now, MaxSubscriptions: 10})
		var created []*plantstore.Subscription
		for range 5 {
			created = append(created, createSubscription(t, svc, "alice"))
			c.Add(time.Millisecond)
		}
		for _, sub := range created {
			if !plantstore.ValidSubscriptionID(sub.ID) {
				t.Fatalf("id %q is not whk_ and 16 hex digits", sub.ID)
			}
			if got, want := sub.ID[4:16], fmt.Sprintf("%012x", sub.CreatedAt.UnixMilli()); got != want {
				t.Fatalf("id %s: time part %s, want %s (%v)", sub.ID, got, want, sub.CreatedAt)
			}
		}
		if diff := cmp.Diff(created, findSubscriptions(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("FindSubscriptions: by id, the creation order (-want +got):\n%s", diff)
		}
	})

	// FindSubscriptions pages like FindPlants: Limit (default 100, at most
	// 1000) and After, and says whether more follow.
	t.Run("Pages", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now, MaxSubscriptions: 200})
		var all []*plantstore.Subscription
		for range 105 {
			all = append(all, createSubscription(t, svc, "alice"))
			c.Add(time.Millisecond)
		}
		createSubscription(t, svc, "bob")
		page, more, err := svc.Webhooks.FindSubscriptions(t.Context(), plantstore.SubscriptionFilter{Owner: "alice"})
		if err != nil || !more || len(page) != plantstore.DefaultPageSize {
			t.Fatalf("default page: %d subscriptions, more %v, %v; want %d, true", len(page), more, err, plantstore.DefaultPageSize)
		}
		var got []*plantstore.Subscription
		f := plantstore.SubscriptionFilter{Owner: "alice", Limit: 40}
		for {
			page, more, err := svc.Webhooks.FindSubscriptions(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if !more {
				break
			}
			f.After = &page[len(page)-1].ID
		}
		if diff := cmp.Diff(all, got, equateTime); diff != "" {
			t.Fatalf("pages of 40 (-want +got):\n%s", diff)
		}
		// An exact last page says no more.
		f = plantstore.SubscriptionFilter{Owner: "alice", After: &all[99].ID, Limit: 5}
		if page, more, err := svc.Webhooks.FindSubscriptions(t.Context(), f); err != nil || more || len(page) != 5 {
			t.Fatalf("the last 5: %d subscriptions, more %v, %v", len(page), more, err)
		}
		for _, f := range []plantstore.SubscriptionFilter{
			{Owner: "alice", Limit: -1},
			{Owner: "alice", Limit: plantstore.MaxPageSize + 1},
			{Owner: "alice", After: ptr("whk_123"), Limit: 10},
			{Owner: "alice", After: ptr("whk_ABCDEF0123456789"), Limit: 10},
		} {
			_, _, err := svc.Webhooks.FindSubscriptions(t.Context(), f)
			checkCode(t, fmt.Sprintf("FindSubscriptions(%+v)", f), err, plantstore.CodeInvalidQuery)
		}
	})

	t.Run("RotateSecret", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		sub := createSubscription(t, svc, "alice")
		other := createSubscription(t, svc, "bob")

		at := c.Add(time.Hour)
		got, err := svc.Webhooks.RotateSecret(ctx, "alice", sub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Secret == sub.Secret || !strings.HasPrefix(got.Secret, "whsec_") {
			t.Fatalf("new secret %q, want a fresh whsec_ secret", got.Secret)
		}
		want := *sub
		want.Secret, want.PreviousSecret, want.PreviousSecretUntil = got.Secret, sub.Secret, ptr(at.Add(plantstore.SecretRotationGrace))
		if diff := cmp.Diff(&want, got, equateTime); diff != "" {
			t.Fatalf("RotateSecret returned (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(&want, findSubscription(t, svc, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("stored after rotation (-want +got):\n%s", diff)
		}

		// A second rotation keeps the secret it replaces, not the first one.
		at2 := c.Add(time.Hour)
		got2, err := svc.Webhooks.RotateSecret(ctx, "alice", sub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		want2 := *sub
		want2.Secret, want2.PreviousSecret, want2.PreviousSecretUntil = got2.Secret, got.Secret, ptr(at2.Add(plantstore.SecretRotationGrace))
		if diff := cmp.Diff(&want2, got2, equateTime); diff != "" {
			t.Fatalf("second RotateSecret returned (-want +got):\n%s", diff)
		}
		// bob's is untouched.
		if diff := cmp.Diff(other, findSubscription(t, svc, "bob", other.ID), equateTime); diff != "" {
			t.Fatalf("bob's subscription (-want +got):\n%s", diff)
		}
	})
}

func testOutbox(t *testing.T, bs Backends) {
	t.Run("FanOut", func(t *testing.T) {
		b, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		a := createSubscription(t, svc, "alice")
		a2 := createSubscription(t, svc, "alice")
		insertSubscription(t, b, "alice", fixedNow, ptr(fixedNow.Add(time.Second))) // disabled: no delivery
		if n, oldest := outboxStats(t, svc); n != 0 || !oldest.IsZero() {
			t.Fatalf("OutboxStats of an empty outbox = %d, %v; want 0, zero time", n, oldest)
		}

		stored := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Fern", Tag: ptr("green")})
		// Neither a replay, nor a conflict, nor an invalid plant, nor
		// another owner's create (bob has no subscription) writes to the
		// outbox.
		if _, created, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Fern", Tag: ptr("green")}); err != nil || created {
			t.Fatalf("replay: created = %v, err = %v", created, err)
		}
		_, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Moss"})
		checkCode(t, "conflicting create", err, plantstore.CodeConflict)
		_, _, err = svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 8, Name: ""})
		checkCode(t, "invalid create", err, plantstore.CodeInvalidBody)
		mustCreate(t, svc, &plantstore.Plant{Owner: "bob", ID: 7, Name: "Fern"})

		n, oldest := outboxStats(t, svc)
		if got, want := n, 2; got != want {
			t.Fatalf("%d pending deliveries, want %d (one per enabled subscription)", got, want)
		}
		checkTime(t, "oldest pending", oldest, stored.CreatedAt)

		tasks := claim(t, svc, time.Minute, 10)
		if got, want := len(tasks), 2; got != want {
			t.Fatalf("claimed %d tasks, want %d", got, want)
		}
		slices.SortFunc(tasks, func(x, y *plantstore.Task) int { return strings.Compare(x.SubscriptionID, y.SubscriptionID) })
		subs := []*plantstore.Subscription{a, a2}
		slices.SortFunc(subs, func(x, y *plantstore.Subscription) int { return strings.Compare(x.ID, y.ID) })
		if tasks[0].MessageID == "" || tasks[0].MessageID != tasks[1].MessageID {
			t.Fatalf("message ids %q and %q, want one shared id", tasks[0].MessageID, tasks[1].MessageID)
		}
		for i, task := range tasks {
			want := &plantstore.Task{
				MessageID:      tasks[0].MessageID,
				SubscriptionID: subs[i].ID,
				Owner:          "alice",
				Event: plantstore.Event{Owner: "alice", Seq: 1, ID: plantstore.EventIDOf(tasks[0].MessageID), Type: plantstore.EventPlantCreated,
					PlantID: 7, Name: stored.Name, Tag: stored.Tag, CreatedAt: stored.CreatedAt,
					PlantCreatedAt: stored.CreatedAt, PlantUpdatedAt: stored.UpdatedAt},
				Attempts:     0,
				CreatedAt:    stored.CreatedAt,
				Subscription: subs[i],
				URL:          subs[i].URL,
				Secrets:      []string{subs[i].Secret},
			}
			if diff := cmp.Diff(want, task, equateTime); diff != "" {
				t.Fatalf("task %d (-want +got):\n%s", i, diff)
			}
		}
		if got, want := string(eventjson.Body(tasks[0])), `{"id":7,"name":"Fern","tag":"green"}`; got != want {
			t.Fatalf("payload = %s, want %s", got, want)
		}
	})

	t.Run("SecretsDuringRotation", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		sub := createSubscription(t, svc, "alice")
		rotated, err := svc.Webhooks.RotateSecret(t.Context(), "alice", sub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		c.Set(fixedNow.Add(time.Hour)) // the service's clock says which secrets sign
		tasks := claim(t, svc, time.Minute, 10)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d tasks, want 1", len(tasks))
		}
		if diff := cmp.Diff([]string{rotated.Secret, sub.Secret}, tasks[0].Secrets); diff != "" {
			t.Fatalf("Secrets during the grace period (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(rotated, tasks[0].Subscription, equateTime); diff != "" {
			t.Fatalf("Subscription of the task (-want +got):\n%s", diff)
		}
		// After the grace period only the new one signs.
		complete(t, svc, tasks[0], plantstore.AttemptResult{StatusCode: 500, State: plantstore.DeliveryPending, NextAttemptAt: ptr(fixedNow)})
		c.Set(fixedNow.Add(plantstore.SecretRotationGrace + time.Minute))
		tasks = claim(t, svc, time.Minute, 10)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d tasks after the grace period, want 1", len(tasks))
		}
		if diff := cmp.Diff([]string{rotated.Secret}, tasks[0].Secrets); diff != "" {
			t.Fatalf("Secrets after the grace period (-want +got):\n%s", diff)
		}
	})

	// The lease is timed by the database's clock, not the service's.
	t.Run("Lease", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		// Before the claim: the lease starts at the database's clock while
		// the claim runs, so a time taken after it returns could be up to
		// that call's duration late (a false failure under load).
		leased := time.Now()
		first := claim(t, svc, time.Second, 10)
		if len(first) != 1 {
			t.Fatalf("claimed %d tasks, want 1", len(first))
		}
		c.Add(time.Hour) // the service's clock moves on; the lease does not end
		if got := claim(t, svc, time.Second, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks during the lease, want 0", len(got))
		}
		if n, _ := outboxStats(t, svc); n != 1 {
			t.Fatalf("%d pending while leased, want 1", n)
		}
		var again []*plantstore.Task
		for deadline := time.Now().Add(10 * time.Second); len(again) == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			again = claim(t, svc, time.Minute, 10)
		}
		if len(again) != 1 || again[0].MessageID != first[0].MessageID {
			t.Fatalf("after the lease claimed %v, want the same delivery again", again)
		}
		if took := time.Since(leased); took < time.Second {
			t.Fatalf("claimed again %v after a lease of 1s", took)
		}
		if got, want := again[0].Attempts, 0; got != want {
			t.Fatalf("Attempts = %d after an expired lease, want %d (no attempt recorded)", got, want)
		}
		if got := claim(t, svc, time.Minute, 0); len(got) != 0 {
			t.Fatalf("claimed %d tasks with limit 0, want 0", len(got))
		}
		if _, err := svc.Outbox.ClaimDeliveries(t.Context(), plantstore.Claim{Limit: 1}); err == nil {
			t.Fatal("ClaimDeliveries with no lease: no error")
		}
	})

	t.Run("CompleteDelivery", func(t *testing.T) {
		c := newClock(fixedNow)
		b, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Fern"})
		now := fixedNow.Add(time.Second)
		task := claim(t, svc, time.Minute, 10)[0]

		retryAt := time.Now().Add(time.Second) // due by the database's clock then
		complete(t, svc, task, plantstore.AttemptResult{AttemptedAt: now, StatusCode: 500, Duration: 1500 * time.Microsecond,
			State: plantstore.DeliveryPending, NextAttemptAt: &retryAt})
		// Released, but not due before its next attempt.
		if got := claim(t, svc, time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks before the retry time, want 0", len(got))
		}
		if n, _ := outboxStats(t, svc); n != 1 {
			t.Fatalf("%d pending awaiting a retry, want 1", n)
		}
		retry := waitTasks(t, svc)
		if len(retry) != 1 || retry[0].MessageID != task.MessageID {
			t.Fatalf("at the retry time claimed %v, want the delivery", retry)
		}
		if time.Now().Before(retryAt) {
			t.Fatalf("claimed at %v a retry due at %v", time.Now(), retryAt)
		}
		if got, want := retry[0].Attempts, 1; got != want {
			t.Fatalf("Attempts = %d, want %d", got, want)
		}
		secondAt := fixedNow.Add(time.Hour)
		complete(t, svc, retry[0], plantstore.AttemptResult{AttemptedAt: secondAt, StatusCode: 204,
			Duration: time.Millisecond, State: plantstore.DeliverySucceeded})
		// Completing a delivery no longer pending changes nothing.
		complete(t, svc, retry[0], plantstore.AttemptResult{AttemptedAt: secondAt.Add(time.Second), Error: "connection refused",
			Duration: 2 * time.Millisecond, State: plantstore.DeliveryFailed})
		if n, oldest := outboxStats(t, svc); n != 0 || !oldest.IsZero() {
			t.Fatalf("OutboxStats after success = %d, %v; want 0, zero time", n, oldest)
		}
		if got := claim(t, svc, time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks after success, want 0", len(got))
		}

		want := []*plantstore.Attempt{
			{MessageID: task.MessageID, PlantID: 3, Attempt: 2, AttemptedAt: secondAt, StatusCode: 204,
				Duration: time.Millisecond, State: plantstore.DeliverySucceeded, SubscriptionID: sub.ID},
			{MessageID: task.MessageID, PlantID: 3, Attempt: 1, AttemptedAt: now, StatusCode: 500,
				Duration: 1500 * time.Microsecond, State: plantstore.DeliveryPending, NextAttemptAt: &retryAt, SubscriptionID: sub.ID},
		}
		if diff := cmp.Diff(want, findAttempts(t, svc, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("FindAttempts, newest first (-want +got):\n%s", diff)
		}
		limited, err := b.ListAttempts(ctx, plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[:1], limited, equateTime); diff != "" {
			t.Fatalf("ListAttempts with limit 1 (-want +got):\n%s", diff)
		}
	})

	t.Run("ErrorWithoutStatus", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Fern"})
		now := fixedNow.Add(time.Second)
		task := claim(t, svc, time.Minute, 10)[0]
		complete(t, svc, task, plantstore.AttemptResult{AttemptedAt: now, Error: "timeout",
			Duration: 15 * time.Second, State: plantstore.DeliveryFailed})
		want := []*plantstore.Attempt{{MessageID: task.MessageID, PlantID: 3, Attempt: 1, AttemptedAt: now, Error: "timeout",
			Duration: 15 * time.Second, State: plantstore.DeliveryFailed, SubscriptionID: sub.ID}}
		if diff := cmp.Diff(want, findAttempts(t, svc, "alice", sub.ID), equateTime); diff != "" {
			t.Fatalf("FindAttempts (-want +got):\n%s", diff)
		}
		if n, _ := outboxStats(t, svc); n != 0 {
			t.Fatalf("%d pending after failure, want 0", n)
		}
	})

	t.Run("Disable", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		gone := createSubscription(t, svc, "alice")
		c.Add(time.Second)
		other := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy"})
		if n, _ := outboxStats(t, svc); n != 4 {
			t.Fatalf("%d pending, want 4", n)
		}
		now := fixedNow.Add(time.Minute)
		var task *plantstore.Task
		for _, tk := range claim(t, svc, time.Minute, 10) {
			if tk.SubscriptionID == gone.ID {
				task = tk
				break
			}
		}
		if task == nil {
			t.Fatal("no task claimed for the subscription")
		}
		attemptedAt := now.Add(time.Second)
		c.Set(now.Add(time.Hour)) // the service's clock is not the disabling time
		complete(t, svc, task, plantstore.AttemptResult{AttemptedAt: attemptedAt, StatusCode: 410,
			State: plantstore.DeliveryFailed, Disable: true})
		want := *gone
		want.DisabledAt, want.DisabledReason, want.FailingSince = &attemptedAt, plantstore.DisabledGone, &attemptedAt
		if diff := cmp.Diff(&want, findSubscription(t, svc, "alice", gone.ID), equateTime); diff != "" {
			t.Fatalf("subscription after a 410 (-want +got):\n%s", diff)
		}
		// Its other delivery failed; the other subscription's two remain.
		if n, _ := outboxStats(t, svc); n != 2 {
			t.Fatalf("%d pending after disabling, want 2", n)
		}
		for _, tk := range claim(t, svc, time.Minute, 10) {
			if tk.SubscriptionID != other.ID {
				t.Fatalf("claimed a task of the disabled subscription: %+v", tk)
			}
		}
		// A disabled subscription gets no new deliveries.
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Moss"})
		if n, _ := outboxStats(t, svc); n != 3 {
			t.Fatalf("%d pending after a create, want 3", n)
		}
		wantAttempts := []*plantstore.Attempt{{MessageID: task.MessageID, PlantID: task.Event.PlantID, Attempt: 1, AttemptedAt: attemptedAt,
			StatusCode: 410, State: plantstore.DeliveryFailed, SubscriptionID: gone.ID}}
		if diff := cmp.Diff(wantAttempts, findAttempts(t, svc, "alice", gone.ID), equateTime); diff != "" {
			t.Fatalf("attempts of the disabled subscription (-want +got):\n%s", diff)
		}
	})

	// With WebhookDisableAfter, a subscription whose attempts have all
	// failed for longer is disabled at its next failed attempt, reason
	// failing; a success starts the count again.
	t.Run("DisableWhenFailing", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now, WebhookDisableAfter: 5 * 24 * time.Hour})
		sub := createSubscription(t, svc, "alice")
		for id := range int64(4) {
			mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: id, Name: "x"})
		}
		// attempt makes an attempt of one of the deliveries, at the
		// service's clock, due again at once unless it succeeded.
		attempt := func(state plantstore.DeliveryState) {
			t.Helper()
			tasks := claim(t, svc, time.Minute, 1)
			if len(tasks) != 1 {
				t.Fatalf("claimed %d tasks, want 1", len(tasks))
			}
			r := plantstore.AttemptResult{StatusCode: 500, State: state}
			if state == plantstore.DeliveryPending {
				r.NextAttemptAt = ptr(fixedNow)
			} else if state == plantstore.DeliverySucceeded {
				r.StatusCode = 200
			}
			complete(t, svc, tasks[0], r)
		}
		enabled := func(what string) {
			t.Helper()
			if got := findSubscription(t, svc, "alice", sub.ID); got.DisabledAt != nil {
				t.Fatalf("%s: disabled (%s at %v)", what, got.DisabledReason, got.DisabledAt)
			}
		}
		attempt(plantstore.DeliveryPending)
		c.Add(4 * 24 * time.Hour)
		attempt(plantstore.DeliveryFailed)
		enabled("failing for 4 days")
		attempt(plantstore.DeliverySucceeded)
		c.Add(2 * 24 * time.Hour)
		attempt(plantstore.DeliveryPending)
		enabled("failing since a success 2 days ago")
		c.Add(5 * 24 * time.Hour)
		enabled("no attempt since")
		at := c.Add(time.Second)
		attempt(plantstore.DeliveryPending)
		got := findSubscription(t, svc, "alice", sub.ID)
		if got.DisabledAt == nil || got.DisabledReason != plantstore.DisabledFailing {
			t.Fatalf("after failing for 5 days and a second: disabled at %v (%q), want at %v (failing)", got.DisabledAt, got.DisabledReason, at)
		}
		checkTime(t, "DisabledAt", *got.DisabledAt, at)
		if n, _ := outboxStats(t, svc); n != 0 {
			t.Fatalf("%d pending after disabling, want 0", n)
		}
	})

	t.Run("DeleteSubscription", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy"})
		now := fixedNow.Add(time.Second)
		tasks := claim(t, svc, time.Minute, 1)
		if len(tasks) != 1 {
			t.Fatalf("claimed %d tasks with limit 1, want 1", len(tasks))
		}
		if err := svc.Webhooks.DeleteSubscription(ctx, "alice", sub.ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := outboxStats(t, svc); n != 0 {
			t.Fatalf("%d pending after delete, want 0", n)
		}
		// The dispatcher finishing a task of the deleted subscription.
		if err := svc.Outbox.CompleteDelivery(ctx, tasks[0], plantstore.AttemptResult{AttemptedAt: now, StatusCode: 200,
			State: plantstore.DeliverySucceeded}); err != nil {
			t.Fatalf("CompleteDelivery after delete: %v", err)
		}
		if got := claim(t, svc, time.Minute, 10); len(got) != 0 {
			t.Fatalf("claimed %d tasks after delete, want 0", len(got))
		}
		_, _, err := svc.Webhooks.FindAttempts(ctx, plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID})
		checkCode(t, "FindAttempts after delete", err, plantstore.CodeWebhookNotFound)
	})

	t.Run("ConcurrentCreatesAndClaims", func(t *testing.T) {
		const n, claimers = 50, 4
		svc := openServices(t, bs)
		sub := createSubscription(t, svc, "alice")
		// Concurrent creates: on backends with group commit these share
		// transactions, whose path must write the outbox too.
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: int64(i), Name: fmt.Sprintf("plant %d", i)})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
		}
		if got, _ := outboxStats(t, svc); got != n {
			t.Fatalf("%d pending, want %d", got, n)
		}

		claimed := make([][]*plantstore.Task, claimers)
		claimErrs := make([]error, claimers)
		start := make(chan struct{})
		for w := range claimers {
			wg.Go(func() {
				<-start
				for {
					tasks, err := svc.Outbox.ClaimDeliveries(t.Context(), plantstore.Claim{Lease: time.Hour, Limit: 3})
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
				if prev, ok := seen[task.Event.PlantID]; ok {
					t.Fatalf("plant %d claimed by claimer %d and claimer %d", task.Event.PlantID, prev, w)
				}
				seen[task.Event.PlantID] = w
				messages[task.MessageID] = true
				if task.SubscriptionID != sub.ID {
					t.Fatalf("task of subscription %s, want %s", task.SubscriptionID, sub.ID)
				}
				want := fmt.Sprintf(`{"id":%d,"name":"plant %d"}`, task.Event.PlantID, task.Event.PlantID)
				if got := string(eventjson.Body(task)); got != want {
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
