package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// A call on broken storage fails within the backend's per-call timeout
// (2 s at most) and this margin.
const failMargin = 5 * time.Second

// After restore, the backend serves again within this (a pool may take a
// few tries to reconnect).
const recoverWithin = 15 * time.Second

// testUnavailable breaks the storage of a backend and checks that every
// write fails in time with plantstore.ErrUnavailable (through the service:
// CodeStorageUnavailable, which wraps it), that nothing of the failed writes
// is stored, and that the backend serves again once the storage is back.
func testUnavailable(t *testing.T, bs Backends) {
	b, breakIt, restore := bs.Unavailable(t)
	broken := false
	defer func() {
		if broken { // the case failed while the storage was away
			restore()
		}
	}()
	svc := service.New(b, service.Config{})
	ctx := t.Context()
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("Ping before breaking: %v", err)
	}

	// Rows the writes below would change.
	sub := createSubscription(t, svc, "alice")
	tok, _ := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
	fern := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
	mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy"})
	// One delivery leased, one due.
	leased := claim(t, svc, time.Minute, 1)
	if len(leased) != 1 {
		t.Fatalf("claimed %d tasks, want 1", len(leased))
	}

	breakIt()
	broken = true

	t.Run("Service", func(t *testing.T) {
		start := time.Now()
		p, created, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 3, Name: "Moss"})
		took := time.Since(start)
		checkCode(t, "CreatePlant on broken storage", err, plantstore.CodeStorageUnavailable)
		checkIs(t, "CreatePlant on broken storage", err, plantstore.ErrUnavailable)
		if p != nil || created {
			t.Fatalf("CreatePlant returned %+v, created %v with an error", p, created)
		}
		if limit := 2*time.Second + failMargin; took > limit {
			t.Fatalf("CreatePlant took %v to fail, want at most %v", took.Round(time.Millisecond), limit)
		}
	})

	t.Run("RowStore", func(t *testing.T) {
		newTok, _, err := plantstore.NewToken("bob", nil, 0, fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		newSub, err := plantstore.NewSubscription("bob", "http://127.0.0.1:9/bob", "", fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		moss := &plantstore.Plant{Owner: "alice", ID: 4, Name: "Moss", CreatedAt: fixedNow}
		now := time.Now()
		for _, w := range []struct {
			name  string
			write func() error
		}{
			{"InsertPlant", func() error { _, _, err := insertPlant(ctx, b, moss, newEvent(t, moss, fixedNow)); return err }},
			{"BulkInsertPlants", func() error {
				_, err := b.BulkInsertPlants(ctx, []*plantstore.Plant{{Owner: "alice", ID: 5, Name: "Palm", CreatedAt: fixedNow}})
				return err
			}},
			{"DeletePlant", func() error { return errOnly(b.DeletePlant(ctx, "alice", fern.ID, nil)) }},
			{"InsertToken", func() error { return b.InsertToken(ctx, newTok) }},
			{"RevokeToken", func() error { return b.RevokeToken(ctx, tok.ID, fixedNow) }},
			{"InsertSubscription", func() error { return b.InsertSubscription(ctx, newSub, plantstore.DefaultMaxSubscriptions) }},
			{"RotateSecret", func() error { _, err := b.RotateSecret(ctx, "alice", sub.ID, "whsec_new", fixedNow); return err }},
			{"DeleteSubscription", func() error { return b.DeleteSubscription(ctx, "alice", sub.ID) }},
			{"CompleteDelivery", func() error {
				return b.CompleteDelivery(ctx, leased[0], plantstore.AttemptResult{AttemptedAt: now, StatusCode: 200, State: plantstore.DeliverySucceeded})
			}},
			// The delivery not leased is due: the claim must write.
			{"ClaimDeliveries", func() error {
				_, err := claimStore(ctx, b, plantstore.Claim{Lease: time.Minute, Limit: 10})
				return err
			}},
		} {
			t.Run(w.name, func(t *testing.T) {
				start := time.Now()
				err := w.write()
				took := time.Since(start)
				checkIs(t, w.name+" on broken storage", err, plantstore.ErrUnavailable)
				if limit := 2*time.Second + failMargin; took > limit {
					t.Fatalf("%s took %v to fail, want at most %v", w.name, took.Round(time.Millisecond), limit)
				}
			})
		}
	})

	restore()
	broken = false

	// Serves again: a create succeeds after a few tries at most.
	deadline := time.Now().Add(recoverWithin)
	for try := 1; ; try++ {
		_, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 6, Name: "Aloe"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CreatePlant still fails %v after restore (%d tries): %v", recoverWithin, try, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Yucca"})
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("Ping after restore: %v", err)
	}

	// Nothing of the failed writes is stored.
	var ids []int64
	for _, p := range listAll(t, svc, "alice") {
		ids = append(ids, p.ID)
	}
	if diff := cmp.Diff([]int64{1, 2, 6, 7}, ids); diff != "" {
		t.Fatalf("alice's plants after restore (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fern, findPlant(t, b, "alice", 1), equateTime); diff != "" {
		t.Fatalf("plant 1 after restore (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*plantstore.Token{tok}, findTokens(t, svc), equateTime); diff != "" {
		t.Fatalf("tokens after restore (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sub, findSubscription(t, svc, "alice", sub.ID), equateTime); diff != "" {
		t.Fatalf("subscription after restore (-want +got):\n%s", diff)
	}
	if got := listSubscriptions(t, b, "bob"); len(got) != 0 {
		t.Fatalf("bob has %d subscriptions after restore, want 0", len(got))
	}
	if got := findAttempts(t, svc, "alice", sub.ID); len(got) != 0 {
		t.Fatalf("%d attempts after restore, want 0", len(got))
	}
	// Plants 1, 2 (one leased, one not), 6 and 7: one delivery each.
	if n, _ := outboxStats(t, svc); n != 4 {
		t.Fatalf("%d pending deliveries after restore, want 4", n)
	}
}
