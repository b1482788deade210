package service_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The claim scheduler (service.Pick).

// due returns deliveries named "owner/sub/n", due n seconds after t0.
func due(names ...string) []plantstore.DueDelivery {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var out []plantstore.DueDelivery
	for _, name := range names {
		var owner, sub string
		var n int
		if _, err := fmt.Sscanf(name, "%1s/%2s/%d", &owner, &sub, &n); err != nil {
			panic(name + ": " + err.Error())
		}
		out = append(out, plantstore.DueDelivery{MessageID: name, SubscriptionID: sub, Owner: owner,
			NextAttemptAt: t0.Add(time.Duration(n) * time.Second)})
	}
	return out
}

func names(ds []plantstore.DueDelivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.MessageID)
	}
	return out
}

func TestPick(t *testing.T) {
	// a has subscriptions a1 and a2 with an old backlog; b and c one each.
	backlog := due("a/a1/1", "a/a1/2", "a/a1/3", "a/a2/4", "a/a2/5", "b/b1/50", "c/c1/60", "c/c1/61")
	for _, tt := range []struct {
		name     string
		claim    plantstore.Claim
		due      []plantstore.DueDelivery
		inFlight []plantstore.InFlight
		want     []string
	}{
		{"Empty", plantstore.Claim{Limit: 5}, nil, nil, []string{}},
		{"NoLimit", plantstore.Claim{}, backlog, nil, []string{}},
		{"EarliestFirstWithinASubscription", plantstore.Claim{Limit: 2}, due("a/a1/3", "a/a1/1", "a/a1/2"), nil,
			[]string{"a/a1/1", "a/a1/2"}},
		// Round one: every owner's first, the oldest first; then every
		// owner's second, an owner's subscriptions in turn.
		{"RoundRobin", plantstore.Claim{Limit: 8}, backlog, nil,
			[]string{"a/a1/1", "b/b1/50", "c/c1/60", "a/a2/4", "c/c1/61", "a/a1/2", "a/a2/5", "a/a1/3"}},
		{"RoundOne", plantstore.Claim{Limit: 3}, backlog, nil, []string{"a/a1/1", "b/b1/50", "c/c1/60"}},
		{"PerSubscription", plantstore.Claim{Limit: 8, PerSubscription: 1}, backlog, nil,
			[]string{"a/a1/1", "b/b1/50", "c/c1/60", "a/a2/4"}},
		{"PerOwner", plantstore.Claim{Limit: 8, PerOwner: 1}, backlog, nil, []string{"a/a1/1", "b/b1/50", "c/c1/60"}},
		// What is in flight counts: a1 is full, a has 2 of 3, c 1 (so c
		// before a).
		{"InFlight", plantstore.Claim{Limit: 8, PerSubscription: 2, PerOwner: 3}, backlog,
			[]plantstore.InFlight{{SubscriptionID: "a1", Owner: "a", N: 2}, {SubscriptionID: "c1", Owner: "c", N: 1}},
			[]string{"b/b1/50", "c/c1/60", "a/a2/4"}},
		// The least busy owner first, however old the others' deliveries.
		{"LeastBusyOwnerFirst", plantstore.Claim{Limit: 1, PerOwner: 8}, backlog,
			[]plantstore.InFlight{{SubscriptionID: "a9", Owner: "a", N: 1}, {SubscriptionID: "c1", Owner: "c", N: 1}},
			[]string{"b/b1/50"}},
		// Within an owner, the least busy subscription first.
		{"LeastBusySubscriptionFirst", plantstore.Claim{Limit: 1}, backlog[:5],
			[]plantstore.InFlight{{SubscriptionID: "a1", Owner: "a", N: 1}},
			[]string{"a/a2/4"}},
		{"AllBusy", plantstore.Claim{Limit: 8, PerOwner: 2}, backlog,
			[]plantstore.InFlight{{SubscriptionID: "a1", Owner: "a", N: 2}, {SubscriptionID: "b1", Owner: "b", N: 2}, {SubscriptionID: "c1", Owner: "c", N: 2}},
			[]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.due)
			if diff := cmp.Diff(tt.want, names(service.Pick(tt.claim, in, tt.inFlight))); diff != "" {
				t.Fatalf("Pick (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPickBacklog: one owner's thousands of older deliveries take no
// more than its share of a claim.
func TestPickBacklog(t *testing.T) {
	var ds []plantstore.DueDelivery
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5000 {
		ds = append(ds, plantstore.DueDelivery{MessageID: fmt.Sprint(i), SubscriptionID: fmt.Sprint("a", i%16), Owner: "a",
			NextAttemptAt: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	ds = append(ds, plantstore.DueDelivery{MessageID: "b", SubscriptionID: "b1", Owner: "b", NextAttemptAt: t0.Add(time.Hour)})
	got := service.Pick(plantstore.Claim{Limit: 32, PerSubscription: 2, PerOwner: 8}, ds, nil)
	n := map[string]int{}
	for _, d := range got {
		n[d.Owner]++
	}
	if diff := cmp.Diff(map[string]int{"a": 8, "b": 1}, n); diff != "" {
		t.Fatalf("picked per owner (-want +got):\n%s", diff)
	}
}
