package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The cases of this file run the webhook operations (resend, recover,
// PATCH, ping, the attempt log, rotation expiry) through the service.

// failAll claims every due delivery and records a failed last attempt of
// each (answered 500 with body), and returns the tasks by plant id.
func failAll(t *testing.T, svc *service.Services, body string) []*plantstore.Task {
	t.Helper()
	tasks := claim(t, svc, time.Minute, 100)
	slices.SortFunc(tasks, func(a, b *plantstore.Task) int { return int(a.Event.PlantID - b.Event.PlantID) })
	for _, task := range tasks {
		complete(t, svc, task, plantstore.AttemptResult{StatusCode: 500, State: plantstore.DeliveryFailed, ResponseBody: body})
	}
	return tasks
}

func recoverSince(t *testing.T, svc *service.Services, id string, since time.Time) int64 {
	t.Helper()
	// since is a time of the cases' clock; the events of plants created
	// then are at that time to the microsecond (TruncateTime).
	n, err := svc.Webhooks.RecoverDeliveries(t.Context(), "alice", id, plantstore.TruncateTime(since))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func plantIDs(tasks []*plantstore.Task) []int64 {
	ids := make([]int64, len(tasks))
	for i, task := range tasks {
		ids[i] = task.Event.PlantID
	}
	slices.Sort(ids)
	return ids
}

func testWebhookOps(t *testing.T, bs Backends) {
	t.Run("RecoverOnlyFailedOnce", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "before T"})
		since := c.Add(time.Hour)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 2, Name: "at T"})
		c.Add(time.Minute)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 3, Name: "after T, succeeds"})
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 4, Name: "after T"})
		tasks := claim(t, svc, time.Minute, 100)
		if len(tasks) != 4 {
			t.Fatalf("claimed %d, want 4", len(tasks))
		}
		for _, task := range tasks {
			r := plantstore.AttemptResult{StatusCode: 500, State: plantstore.DeliveryFailed}
			if task.Event.PlantID == 3 {
				r = plantstore.AttemptResult{StatusCode: 200, State: plantstore.DeliverySucceeded}
			}
			complete(t, svc, task, r)
		}
		if got, want := recoverSince(t, svc, sub.ID, since), int64(2); got != want {
			t.Fatalf("recover since T re-queued %d, want %d (plants 2 and 4)", got, want)
		}
		if got := recoverSince(t, svc, sub.ID, since); got != 0 {
			t.Fatalf("second recover since T re-queued %d, want 0", got)
		}
		requeued := failAll(t, svc, "")
		if got, want := plantIDs(requeued), []int64{2, 4}; !slices.Equal(got, want) {
			t.Fatalf("re-queued plants %v, want %v", got, want)
		}
		for _, task := range requeued {
			if task.MessageID != tasksByPlant(tasks)[task.Event.PlantID].MessageID {
				t.Fatalf("plant %d re-queued with message id %s, want the original", task.Event.PlantID, task.MessageID)
			}
		}
		// They failed again: a recover re-queued them once, so no later
		// recover does, whatever its since (one a second later, or an
		// earlier one, which takes in plant 1 only).
		c.Add(time.Second)
		if got := recoverSince(t, svc, sub.ID, since); got != 0 {
			t.Fatalf("third recover since T re-queued %d, want 0", got)
		}
		if got := recoverSince(t, svc, sub.ID, since.Add(time.Second)); got != 0 {
			t.Fatalf("recover since T+1s re-queued %d, want 0", got)
		}
		if got, want := recoverSince(t, svc, sub.ID, fixedNow), int64(1); got != want {
			t.Fatalf("recover since an earlier time re-queued %d, want %d (plant 1 only)", got, want)
		}
		if got, want := plantIDs(failAll(t, svc, "")), []int64{1}; !slices.Equal(got, want) {
			t.Fatalf("re-queued plants %v, want %v", got, want)
		}
		if got := recoverSince(t, svc, sub.ID, fixedNow); got != 0 {
			t.Fatalf("recover after every failed delivery was re-queued once: %d, want 0", got)
		}
		// A resend makes its delivery recoverable again.
		if _, err := svc.Webhooks.ResendDelivery(t.Context(), "alice", sub.ID, tasksByPlant(tasks)[2].MessageID); err != nil {
			t.Fatal(err)
		}
		if got, want := plantIDs(failAll(t, svc, "")), []int64{2}; !slices.Equal(got, want) {
			t.Fatalf("resent plants %v, want %v", got, want)
		}
		if got := recoverSince(t, svc, sub.ID, fixedNow); got != 1 {
			t.Fatalf("recover after a resend failed again re-queued %d, want 1", got)
		}
		if got, want := plantIDs(failAll(t, svc, "")), []int64{2}; !slices.Equal(got, want) {
			t.Fatalf("re-queued plants %v, want %v", got, want)
		}
		// A re-enable makes them all recoverable again.
		for _, on := range []bool{false, true} {
			if _, _, err := svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Enabled: ptr(on)}); err != nil {
				t.Fatal(err)
			}
		}
		if got := recoverSince(t, svc, sub.ID, fixedNow); got != 3 {
			t.Fatalf("recover after a re-enable re-queued %d, want 3", got)
		}
		if got, want := plantIDs(claim(t, svc, time.Minute, 100)), []int64{1, 2, 4}; !slices.Equal(got, want) {
			t.Fatalf("re-queued plants %v, want %v", got, want)
		}
		_, err := svc.Webhooks.RecoverDeliveries(t.Context(), "bob", sub.ID, since)
		checkCode(t, "bob's recover", err, plantstore.CodeWebhookNotFound)
	})

	t.Run("RecoverSinceRange", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		failAll(t, svc, "")
		for _, since := range []time.Time{
			time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), // past SQLite's int64 nanoseconds
			fixedNow.Add(time.Second),                     // in the future
			time.Unix(0, 0).Add(-time.Nanosecond),         // before 1970
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		} {
			_, err := svc.Webhooks.RecoverDeliveries(t.Context(), "alice", sub.ID, since)
			checkCode(t, "recover since "+since.String(), err, plantstore.CodeInvalidBody)
			if e := new(plantstore.Error); errors.As(err, &e) && !strings.HasPrefix(e.Message, "invalid RecoverRequest: since: must not be") {
				t.Errorf("recover since %v: message %q", since, e.Message)
			}
		}
		if n, _ := outboxStats(t, svc); n != 0 {
			t.Fatalf("%d deliveries pending after refused recovers, want 0", n)
		}
		// The bounds themselves are fine.
		if got := recoverSince(t, svc, sub.ID, time.Unix(0, 0)); got != 1 {
			t.Fatalf("recover since 1970 re-queued %d, want 1", got)
		}
		if got := recoverSince(t, svc, sub.ID, fixedNow); got != 0 {
			t.Fatalf("recover since now re-queued %d, want 0", got)
		}
	})

	t.Run("Resend", func(t *testing.T) {
		_, svc := open(t, bs, service.Config{})
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		task := failAll(t, svc, "")[0]
		d, err := svc.Webhooks.ResendDelivery(t.Context(), "alice", sub.ID, task.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != plantstore.DeliveryPending || d.Attempts != 1 || d.MessageID != task.MessageID || d.PlantID != 1 || d.NextAttemptAt == nil {
			t.Fatalf("resent delivery = %+v", d)
		}
		again := claim(t, svc, time.Minute, 10)
		if len(again) != 1 || again[0].MessageID != task.MessageID || again[0].Attempts != 1 {
			t.Fatalf("claimed after resend: %+v", again)
		}
		_, err = svc.Webhooks.ResendDelivery(t.Context(), "alice", sub.ID, "msg_000000000000000000000000")
		checkCode(t, "resend of an unknown delivery", err, plantstore.CodeDeliveryNotFound)
		_, err = svc.Webhooks.ResendDelivery(t.Context(), "bob", sub.ID, task.MessageID)
		checkCode(t, "bob's resend", err, plantstore.CodeWebhookNotFound)
	})

	t.Run("DisableEnable", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		sub := createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		disabledAt := c.Add(time.Minute)
		off, missed, err := svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Enabled: ptr(false), Description: ptr("")})
		if err != nil {
			t.Fatal(err)
		}
		if off.DisabledAt == nil || off.DisabledReason != plantstore.DisabledManual || missed != nil || off.Description != "" {
			t.Fatalf("disabled = %+v, missed %v", off, missed)
		}
		checkTime(t, "DisabledAt", *off.DisabledAt, disabledAt)
		if got := findSubscription(t, svc, "alice", sub.ID); got.DisabledReason != plantstore.DisabledManual {
			t.Fatalf("stored reason %q, want manual", got.DisabledReason)
		}
		if n, _ := outboxStats(t, svc); n != 0 {
			t.Fatalf("%d pending deliveries after a disable, want 0", n)
		}
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Moss"}) // no delivery
		_, err = svc.Webhooks.ResendDelivery(t.Context(), "alice", sub.ID, "msg_000000000000000000000000")
		checkCode(t, "resend to a disabled subscription", err, plantstore.CodeWebhookDisabled)
		_, err = svc.Webhooks.RecoverDeliveries(t.Context(), "alice", sub.ID, fixedNow)
		checkCode(t, "recover of a disabled subscription", err, plantstore.CodeWebhookDisabled)

		c.Add(time.Minute)
		on, missed, err := svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Enabled: ptr(true), URL: ptr("http://127.0.0.1:9/new")})
		if err != nil {
			t.Fatal(err)
		}
		if on.DisabledAt != nil || on.DisabledReason != "" || on.FailingSince != nil || on.URL != "http://127.0.0.1:9/new" || missed == nil {
			t.Fatalf("enabled = %+v, missed %v", on, missed)
		}
		checkTime(t, "missed since", *missed, disabledAt)
		if got := recoverSince(t, svc, sub.ID, *missed); got != 0 {
			t.Fatalf("recover since the disable re-queued %d, want 0 (plant 1 was created before)", got)
		}
		if got := recoverSince(t, svc, sub.ID, fixedNow); got != 1 {
			t.Fatalf("recover since the start re-queued %d, want 1", got)
		}
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Ivy"})
		if got, want := plantIDs(claim(t, svc, time.Minute, 10)), []int64{1, 3}; !slices.Equal(got, want) {
			t.Fatalf("claimed plants %v after re-enabling, want %v", got, want)
		}
		typed, _, err := svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Types: &[]string{"plant.deleted", "plant.created"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := findSubscription(t, svc, "alice", sub.ID).Types; !slices.Equal(typed.Types, []string{"plant.created", "plant.deleted"}) || !slices.Equal(got, typed.Types) {
			t.Fatalf("types after PATCH %v, stored %v", typed.Types, got)
		}
		if untyped, _, err := svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Types: &[]string{}}); err != nil || untyped.Types != nil {
			t.Fatalf("types after PATCH [] = %v, %v; want nil", untyped.Types, err)
		}
		if got := findSubscription(t, svc, "alice", sub.ID); got.Types != nil || got.URL != "http://127.0.0.1:9/new" {
			t.Fatalf("stored after PATCH types []: %+v", got)
		}
		_, _, err = svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Types: &[]string{"plant.eaten"}})
		checkCode(t, "PATCH with an unknown type", err, plantstore.CodeInvalidBody)
		_, _, err = svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{URL: ptr("ftp://x")})
		checkCode(t, "PATCH with a bad URL", err, plantstore.CodeInvalidBody)
		_, _, err = svc.Webhooks.UpdateSubscription(t.Context(), "bob", sub.ID, plantstore.SubscriptionUpdate{})
		checkCode(t, "bob's PATCH", err, plantstore.CodeWebhookNotFound)
	})

	// A ping goes through the Sender unless the subscription is disabled
	// (409 40903, as resend) or has as many attempts in flight as it may:
	// the deliveries leased now to it (the store's CountLeased) count
	// (409 40904, and the Sender is not called).
	t.Run("Ping", func(t *testing.T) {
		snd := new(pingSender)
		_, svc := open(t, bs, service.Config{Sender: snd, Delivery: service.DeliveryConfig{MaxInFlight: 1}})
		sub := createSubscription(t, svc, "alice")
		if r, err := svc.Webhooks.PingSubscription(t.Context(), "alice", sub.ID); err != nil || r.StatusCode != 200 || !plantstore.ValidMessageID(r.MessageID) {
			t.Fatalf("ping = %+v, %v", r, err)
		}
		// A delivery leased: the subscription's one attempt in flight.
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		if tasks := claim(t, svc, time.Minute, 10); len(tasks) != 1 {
			t.Fatalf("claimed %d deliveries, want 1", len(tasks))
		}
		_, err := svc.Webhooks.PingSubscription(t.Context(), "alice", sub.ID)
		checkCode(t, "ping past the bound", err, plantstore.CodeWebhookBusy)
		if _, _, err := svc.Webhooks.UpdateSubscription(t.Context(), "alice", sub.ID, plantstore.SubscriptionUpdate{Enabled: ptr(false)}); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Webhooks.PingSubscription(t.Context(), "alice", sub.ID)
		checkCode(t, "ping of a disabled subscription", err, plantstore.CodeWebhookDisabled)
		_, err = svc.Webhooks.PingSubscription(t.Context(), "bob", sub.ID)
		checkCode(t, "bob's ping", err, plantstore.CodeWebhookNotFound)
		if got, want := snd.sent, []string{sub.ID}; !slices.Equal(got, want) {
			t.Fatalf("the Sender sent to %v, want %v (once: never past the bound or for a disabled subscription)", got, want)
		}
	})

	t.Run("AttemptLog", func(t *testing.T) {
		_, svc := open(t, bs, service.Config{})
		sub := createSubscription(t, svc, "alice")
		for id := int64(1); id <= 5; id++ {
			mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: id, Name: "Fern"})
		}
		body := "down \x00\xff" + string(make([]byte, 2000))
		tasks := claim(t, svc, time.Minute, 100)
		for _, task := range tasks {
			r := plantstore.AttemptResult{StatusCode: 500, State: plantstore.DeliveryFailed, ResponseBody: plantstore.ResponseExcerpt([]byte(body))}
			if task.Event.PlantID%2 == 0 {
				r = plantstore.AttemptResult{StatusCode: 200, State: plantstore.DeliverySucceeded, ResponseBody: "ok"}
			}
			complete(t, svc, task, r)
		}
		var all []*plantstore.Attempt
		f := plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID, Limit: 2}
		for pages := 0; ; pages++ {
			page, more, err := svc.Webhooks.FindAttempts(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if !more {
				if pages != 2 {
					t.Fatalf("%d pages, want 3", pages+1)
				}
				break
			}
			f.After = ptr(page[len(page)-1].Cursor())
		}
		if len(all) != 5 {
			t.Fatalf("%d attempts over the pages, want 5", len(all))
		}
		seen := map[string]bool{}
		for i, a := range all {
			if seen[a.MessageID] {
				t.Fatalf("attempt of %s twice over the pages", a.MessageID)
			}
			seen[a.MessageID] = true
			if i > 0 && a.AttemptedAt.After(all[i-1].AttemptedAt) {
				t.Fatalf("attempt %d is newer than the one before it", i)
			}
			want := `down \x00\xff`
			if a.State == plantstore.DeliverySucceeded {
				want = "ok"
			}
			if len(a.ResponseBody) < len(want) || a.ResponseBody[:len(want)] != want {
				t.Fatalf("response body %q, want it to start with %q", a.ResponseBody, want)
			}
		}
		failed, more, err := svc.Webhooks.FindAttempts(t.Context(), plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID, State: plantstore.DeliveryFailed})
		if err != nil || more {
			t.Fatal(err, more)
		}
		if len(failed) != 3 {
			t.Fatalf("%d failed attempts, want 3", len(failed))
		}
		for _, a := range failed {
			if a.State != plantstore.DeliveryFailed || a.PlantID%2 == 0 {
				t.Fatalf("state filter failed gave %+v", a)
			}
		}
		_, _, err = svc.Webhooks.FindAttempts(t.Context(), plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID, State: "lost"})
		checkCode(t, "unknown state", err, plantstore.CodeInvalidQuery)
	})

	t.Run("RotateExpiry", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		sub := createSubscription(t, svc, "alice")
		now, err := svc.Webhooks.RotateSecret(t.Context(), "alice", sub.ID, ptr(time.Duration(0)))
		if err != nil {
			t.Fatal(err)
		}
		if got := now.SigningSecrets(c.Now()); len(got) != 1 || got[0] != now.Secret {
			t.Fatalf("signing secrets after a rotation expiring now: %d", len(got))
		}
		hour, err := svc.Webhooks.RotateSecret(t.Context(), "alice", sub.ID, ptr(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "PreviousSecretUntil", *hour.PreviousSecretUntil, fixedNow.Add(time.Hour))
		_, err = svc.Webhooks.RotateSecret(t.Context(), "alice", sub.ID, ptr(plantstore.MaxOldSecretExpiry+time.Second))
		checkCode(t, "expiry past the most", err, plantstore.CodeInvalidBody)
	})
}

// tasksByPlant maps tasks by plant id.
func tasksByPlant(tasks []*plantstore.Task) map[int64]*plantstore.Task {
	m := make(map[int64]*plantstore.Task, len(tasks))
	for _, task := range tasks {
		m[task.Event.PlantID] = task
	}
	return m
}

// pingSender is a service.Sender whose every request is answered 200; it
// records the subscription of each.
type pingSender struct {
	mu   sync.Mutex
	sent []string
}

func (s *pingSender) Send(ctx context.Context, t *plantstore.Task) plantstore.SendResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, t.SubscriptionID)
	return plantstore.SendResult{AttemptedAt: time.Now(), StatusCode: 200}
}

func (s *pingSender) CheckURL(string) error { return nil }
