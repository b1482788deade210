package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/textsearch"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// TestPreload: preload stores the ids asked for on both backends, in
// batches, counts only what it stored (ids that exist are skipped), and the
// server's plant service reads them back.
func TestPreload(t *testing.T) {
	for _, tt := range []struct {
		name string
		db   func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "preload.db") }},
		{"PostgreSQL", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			o := options{db: tt.db(t), owner: "admin", from: 1, to: 250, batch: 100}
			if n, err := preload(ctx, o); err != nil {
				t.Fatal(err)
			} else if got, want := n, int64(250); got != want {
				t.Fatalf("first preload stored %d, want %d", got, want)
			}
			o.from, o.to = 201, 300 // 201..250 are there already
			if n, err := preload(ctx, o); err != nil {
				t.Fatal(err)
			} else if got, want := n, int64(50); got != want {
				t.Fatalf("second preload stored %d, want %d", got, want)
			}

			db := openBackend(o)
			if err := db.Open(ctx); err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			plants, more, err := service.New(db, service.Config{}).Plants.FindPlants(ctx,
				plantstore.PlantFilter{Owner: "admin", Limit: plantstore.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(plants), 300; got != want || more {
				t.Fatalf("%d plants stored (more: %v), want %d", got, more, want)
			}
			if p := plants[9]; p.ID != 10 || p.Name != plantName(10) || p.Tag != nil {
				t.Errorf("plant 10 = %+v, want name %q and no tag", p, plantName(10))
			}
			if p, want := plants[10], plantTag(11); p.Tag == nil || *p.Tag != *want {
				t.Errorf("plant 11 tag = %v, want %s", p.Tag, *want)
			}
			for _, p := range plants[:3] {
				if got, want := p.CreatedAt, plantCreatedAt(p.ID); !got.Equal(want) || !p.UpdatedAt.Equal(want) {
					t.Errorf("plant %d created %v, updated %v, want %v", p.ID, got, p.UpdatedAt, want)
				}
			}
		})
	}
}

// TestVocab: the vocabulary has vocabSize words, distinct once folded, the
// benchmark's rare word last; names are 2 or 3 vocabulary words and the
// same for the same id.
func TestVocab(t *testing.T) {
	if got, want := len(vocab), vocabSize; got != want {
		t.Fatalf("%d words, want %d", got, want)
	}
	rank := make(map[string]int, len(vocab))
	for i, w := range vocab {
		f := textsearch.Words(w)
		if len(f) != 1 {
			t.Fatalf("word %q is %d words once folded", w, len(f))
		}
		if j, ok := rank[f[0]]; ok {
			t.Fatalf("words %q and %q fold to the same %q", vocab[j], w, f[0])
		}
		rank[f[0]] = i
	}
	if got, want := rank[queryRare], vocabSize-1; got != want {
		t.Errorf("%s has rank %d, want %d (the last)", queryRare, got, want)
	}
	if got := rank[queryCommon]; got != 0 {
		t.Errorf("%s has rank %d, want 0", queryCommon, got)
	}
	accented := 0
	for id := int64(1); id <= 1000; id++ {
		name := plantName(id)
		if name != plantName(id) {
			t.Fatalf("plant %d: two names", id)
		}
		words := textsearch.Words(name)
		if n := len(words); n < 2 || n > 3 || len(strings.Fields(name)) != n {
			t.Fatalf("plant %d: name %q: want 2 or 3 distinct words", id, name)
		}
		for _, w := range words {
			if _, ok := rank[w]; !ok {
				t.Fatalf("plant %d: name %q: %q is not in the vocabulary", id, name, w)
			}
		}
		if textsearch.Words(name)[0] != strings.Fields(strings.ToLower(name))[0] ||
			strings.Join(words, " ") != strings.ToLower(name) {
			accented++
		}
		if got := plantTag(id) == nil; got != (id%10 == 0) {
			t.Errorf("plant %d: tag %v", id, plantTag(id))
		}
	}
	if accented == 0 {
		t.Error("no accented name among plants 1..1000")
	}
}

// TestWords: --words counts what the benchmark's queries match.
func TestWords(t *testing.T) {
	var b bytes.Buffer
	printWords(&b, 1, 20000)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("line %q: want 3 fields", line)
		}
		got[f[0]] = f[2]
	}
	if got["all"] != "20000" {
		t.Errorf("all: %s plants, want 20000", got["all"])
	}
	for _, kind := range []string{"common", "rare", "two", "prefix", "tag"} {
		if got[kind] == "" {
			t.Errorf("no %s query in\n%s", kind, b.String())
		}
	}
	common := 0
	for id := int64(1); id <= 20000; id++ {
		if strings.Contains(textsearch.Document(plantName(id), plantTag(id)), " "+queryCommon) {
			common++
		}
	}
	if want := strconv.Itoa(common); got["common"] != want {
		t.Errorf("common: %s plants, want %s", got["common"], want)
	}
}
