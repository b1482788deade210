package plantstore_test

import (
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

func TestNewSubscriptionID(t *testing.T) {
	at := time.UnixMilli(0x0123456789ab)
	seen := map[string]bool{}
	for range 100 {
		id, err := plantstore.NewSubscriptionID(at)
		if err != nil {
			t.Fatal(err)
		}
		if !plantstore.ValidSubscriptionID(id) || id[:16] != "whk_0123456789ab" {
			t.Fatalf("id %q, want whk_0123456789ab and 4 hex digits", id)
		}
		seen[id] = true
	}
	if len(seen) < 90 {
		t.Fatalf("%d distinct ids of 100 in one millisecond", len(seen))
	}
	earlier, _ := plantstore.NewSubscriptionID(at.Add(-time.Millisecond))
	later, _ := plantstore.NewSubscriptionID(at.Add(time.Millisecond))
	if !(earlier < later) {
		t.Fatalf("id %s of a millisecond before sorts after %s", earlier, later)
	}
	for id, want := range map[string]bool{
		"whk_0123456789abcdef": true, "whk_0123456789ABCDEF": false, "whk_0123": false,
		"whx_0123456789abcdef": false, "whk_0123456789abcdeg": false, "whk_0123456789abcdef0": false,
	} {
		if got := plantstore.ValidSubscriptionID(id); got != want {
			t.Errorf("ValidSubscriptionID(%q) = %v, want %v", id, got, want)
		}
	}
}
