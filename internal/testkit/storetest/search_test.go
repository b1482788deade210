package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// modelList is what a PlantStore's ListPlants answers for f over plants, by
// the definitions of PlantFilter and textsearch.Document, without a limit.
func modelList(plants []*plantstore.Plant, f plantstore.PlantFilter) []*plantstore.Plant {
	var out []*plantstore.Plant
	for _, p := range plants {
		if p.Owner != f.Owner {
			continue
		}
		if len(f.Tags) > 0 && (p.Tag == nil || !slices.Contains(f.Tags, *p.Tag)) {
			continue
		}
		doc := textsearch.Document(p.Name, p.Tag)
		if slices.ContainsFunc(f.Words, func(w string) bool { return !strings.Contains(doc, " "+w) }) {
			continue
		}
		if !f.CreatedAfter.IsZero() && !p.CreatedAt.After(f.CreatedAfter) ||
			!f.CreatedBefore.IsZero() && !p.CreatedAt.Before(f.CreatedBefore) {
			continue
		}
		out = append(out, p)
	}
	compare := func(a, b *plantstore.Plant) int { return comparePlants(f.Sort, a, b) }
	slices.SortFunc(out, compare)
	if f.After != nil {
		after := &plantstore.Plant{ID: f.After.ID, Name: f.After.Name, CreatedAt: f.After.CreatedAt}
		out = slices.DeleteFunc(out, func(p *plantstore.Plant) bool { return compare(p, after) <= 0 })
	}
	return out
}

// TestSearchTable checks the search table against the definitions: a
// case whose answer is not what they give is a mistake of the table.
func TestSearchTable(t *testing.T) {
	plants := searchPlants()
	names := map[string]bool{}
	for _, tt := range searchCases() {
		if names[tt.name] {
			t.Errorf("two cases named %s", tt.name)
		}
		names[tt.name] = true
		f := tt.f
		if f.Owner == "" {
			f.Owner = "alice"
		}
		if err := f.Validate(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		got := []int64{}
		for _, p := range modelList(plants, f) {
			got = append(got, p.ID)
		}
		if diff := gocmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-table +definition):\n%s\n%s", tt.name, diff, fmt.Sprint(got))
		}
	}
}
