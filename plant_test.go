package plantstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func ptr[T any](v T) *T { return &v }

func TestPlantSameContent(t *testing.T) {
	for _, tt := range []struct {
		name string
		p, q plantstore.Plant
		want bool
	}{
		{"NoTags", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern"}, true},
		{"SameTag", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, true},
		{"EmptyTags", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}, true},
		{"OwnerAndTimeIgnored", plantstore.Plant{Owner: "a", ID: 1, Name: "Fern"}, plantstore.Plant{Owner: "b", ID: 1, Name: "Fern", CreatedAt: now}, true},
		{"DifferentID", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 2, Name: "Fern"}, false},
		{"DifferentName", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "fern"}, false},
		{"TagAdded", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, false},
		{"TagRemoved", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern"}, false},
		{"EmptyTagVersusNone", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}, plantstore.Plant{ID: 1, Name: "Fern"}, false},
		{"TagChanged", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("red")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.p.SameContent(&tt.q), tt.want; got != want {
				t.Fatalf("p.SameContent(q) = %v, want %v", got, want)
			}
			if got, want := tt.q.SameContent(&tt.p), tt.want; got != want {
				t.Fatalf("q.SameContent(p) = %v, want %v (not symmetric)", got, want)
			}
		})
	}
}

func TestPlantValidate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		plant    plantstore.Plant
		wantCode int32
	}{
		{"OK", plantstore.Plant{ID: 1, Name: "Fern"}, 0},
		{"OKWithTag", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, 0},
		{"OKEmptyTag", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}, 0},
		{"OKName256ASCII", plantstore.Plant{Name: strings.Repeat("a", 256)}, 0},
		// 256 code points, 512 bytes: the limit is in characters, not bytes.
		{"OKName256MultiByte", plantstore.Plant{Name: strings.Repeat("é", 256)}, 0},
		{"OKName256FourByte", plantstore.Plant{Name: strings.Repeat("🌿", 256)}, 0},
		{"OKTag64MultiByte", plantstore.Plant{Name: "Fern", Tag: ptr(strings.Repeat("é", 64))}, 0},
		{"OKWhitespaceName", plantstore.Plant{Name: " "}, 0},
		{"ErrNameEmpty", plantstore.Plant{Name: ""}, plantstore.CodeInvalidBody},
		{"ErrName257ASCII", plantstore.Plant{Name: strings.Repeat("a", 257)}, plantstore.CodeInvalidBody},
		{"ErrName257MultiByte", plantstore.Plant{Name: strings.Repeat("é", 257)}, plantstore.CodeInvalidBody},
		{"ErrTag65", plantstore.Plant{Name: "Fern", Tag: ptr(strings.Repeat("t", 65))}, plantstore.CodeInvalidBody},
		{"ErrTag65MultiByte", plantstore.Plant{Name: "Fern", Tag: ptr(strings.Repeat("é", 65))}, plantstore.CodeInvalidBody},
		{"ErrNameInvalidUTF8", plantstore.Plant{Name: "Fern\xff"}, plantstore.CodeInvalidBody},
		{"ErrTagInvalidUTF8", plantstore.Plant{Name: "Fern", Tag: ptr("\xc3")}, plantstore.CodeInvalidBody},
		{"ErrNameNUL", plantstore.Plant{Name: "Fe\x00rn"}, plantstore.CodeInvalidBody},
		{"ErrNameOnlyNUL", plantstore.Plant{Name: "\x00"}, plantstore.CodeInvalidBody},
		{"ErrTagNUL", plantstore.Plant{Name: "Fern", Tag: ptr("green\x00")}, plantstore.CodeInvalidBody},
		{"OKTagControl", plantstore.Plant{Name: "Fern", Tag: ptr("a\tb")}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plant.Validate()
			if got, want := plantstore.ErrorCode(err), tt.wantCode; got != want {
				t.Fatalf("ErrorCode(Validate()) = %d (%v), want %d", got, err, want)
			}
		})
	}
}

func TestPlantFilterValidate(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		f        plantstore.PlantFilter
		wantCode int32
	}{
		{"OKNoTag", plantstore.PlantFilter{}, 0},
		{"OKTag", plantstore.PlantFilter{Tags: []string{"green"}}, 0},
		{"OKEmptyTag", plantstore.PlantFilter{Tags: []string{""}}, 0},
		{"OKLongTag", plantstore.PlantFilter{Tags: []string{strings.Repeat("t", 1000)}}, 0}, // matches nothing
		{"OKMaxTags", plantstore.PlantFilter{Tags: make([]string, plantstore.MaxFilterTags)}, 0},
		{"OKMaxWords", plantstore.PlantFilter{Words: make([]string, plantstore.MaxQueryWords)}, 0},
		{"OKTimes", plantstore.PlantFilter{CreatedAfter: t0, CreatedBefore: t0.Add(time.Microsecond)}, 0},
		{"OKOnlyAfter", plantstore.PlantFilter{CreatedAfter: t0}, 0},
		{"ErrTagNUL", plantstore.PlantFilter{Tags: []string{"ok", "gr\x00een"}}, plantstore.CodeInvalidBody},
		{"ErrTagInvalidUTF8", plantstore.PlantFilter{Tags: []string{"\xff"}}, plantstore.CodeInvalidBody},
		{"ErrTooManyTags", plantstore.PlantFilter{Tags: make([]string, plantstore.MaxFilterTags+1)}, plantstore.CodeInvalidQuery},
		{"ErrTooManyWords", plantstore.PlantFilter{Words: make([]string, plantstore.MaxQueryWords+1)}, plantstore.CodeInvalidQuery},
		{"ErrTimesEqual", plantstore.PlantFilter{CreatedAfter: t0, CreatedBefore: t0}, plantstore.CodeInvalidQuery},
		{"ErrTimesReversed", plantstore.PlantFilter{CreatedAfter: t0.Add(time.Second), CreatedBefore: t0}, plantstore.CodeInvalidQuery},
		{"ErrSort", plantstore.PlantFilter{Sort: plantstore.PlantSort(99)}, plantstore.CodeInvalidQuery},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			f.Owner = "alice"
			if got, want := plantstore.ErrorCode(f.Validate()), tt.wantCode; got != want {
				t.Fatalf("ErrorCode(Validate()) = %d, want %d", got, want)
			}
		})
	}
}

func TestParsePlantSort(t *testing.T) {
	for i, name := range plantstore.SortNames() {
		s, err := plantstore.ParsePlantSort(name)
		if err != nil || int(s) != i || s.String() != name {
			t.Fatalf("ParsePlantSort(%q) = %v, %v", name, s, err)
		}
		if got, want := s.Desc(), strings.HasPrefix(name, "-"); got != want {
			t.Fatalf("%s: Desc = %v", name, got)
		}
		if got, want := s.Key(), strings.TrimPrefix(name, "-"); got != want {
			t.Fatalf("%s: Key = %q", name, got)
		}
	}
	for _, bad := range []string{"", "ID", "+id", "--id", "tag", "name,id"} {
		if _, err := plantstore.ParsePlantSort(bad); plantstore.ErrorCode(err) != plantstore.CodeInvalidQuery {
			t.Fatalf("ParsePlantSort(%q): %v", bad, err)
		}
	}
}

// TestCursor: a cursor gives back the position it was made at, with the
// query it was made for, and is refused with any other.
func TestCursor(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 123456000, time.UTC)
	last := &plantstore.Plant{ID: -42, Name: "Café ☕", CreatedAt: t0}
	base := plantstore.PlantFilter{Owner: "alice", Tags: []string{"b", "a"}, Words: []string{"mon", "del"}, CreatedAfter: t0.Add(-time.Hour), Limit: 10}
	for _, sort := range plantstore.SortNames() {
		t.Run(sort, func(t *testing.T) {
			f := base
			f.Sort, _ = plantstore.ParsePlantSort(sort)
			cursor := f.Cursor(last)
			g := f
			g.Limit = 3                                                       // the page size is not the query
			g.Tags, g.Words = []string{"a", "b", "a"}, []string{"del", "mon"} // sets: order and repeats do not count
			g.Owner = "bob"
			if err := g.SetCursor(cursor); err != nil {
				t.Fatal(err)
			}
			want := &plantstore.PlantKey{ID: -42}
			switch f.Sort.Key() {
			case "name":
				want.Name = last.Name
			case "created_at":
				want.CreatedAt = t0
			}
			if diff := cmp.Diff(want, g.After); diff != "" {
				t.Fatalf("After (-want +got):\n%s", diff)
			}
			for name, other := range map[string]func(*plantstore.PlantFilter){
				"Sort":          func(h *plantstore.PlantFilter) { h.Sort = (h.Sort + 1) % 6 },
				"Words":         func(h *plantstore.PlantFilter) { h.Words = []string{"mon"} },
				"Tags":          func(h *plantstore.PlantFilter) { h.Tags = nil },
				"CreatedAfter":  func(h *plantstore.PlantFilter) { h.CreatedAfter = time.Time{} },
				"CreatedBefore": func(h *plantstore.PlantFilter) { h.CreatedBefore = t0 },
			} {
				h := f
				other(&h)
				err := h.SetCursor(cursor)
				if plantstore.ErrorCode(err) != plantstore.CodeInvalidQuery || !strings.Contains(err.Error(), "another query") {
					t.Fatalf("%s changed: %v", name, err)
				}
			}
		})
	}
	t.Run("PlainID", func(t *testing.T) {
		f := plantstore.PlantFilter{}
		if err := f.SetCursor("-7"); err != nil || f.After == nil || f.After.ID != -7 {
			t.Fatalf("%v %+v", err, f.After)
		}
		f = plantstore.PlantFilter{Sort: plantstore.SortName}
		if err := f.SetCursor("7"); plantstore.ErrorCode(err) != plantstore.CodeInvalidQuery {
			t.Fatal(err)
		}
	})
	t.Run("Garbage", func(t *testing.T) {
		f := plantstore.PlantFilter{Sort: plantstore.SortCreatedAt}
		good := f.Cursor(last)
		for _, bad := range []string{"", "x", "!!", "AQ", good[:len(good)-2], good + "AA", "9223372036854775808"} {
			g := f
			if err := g.SetCursor(bad); plantstore.ErrorCode(err) != plantstore.CodeInvalidQuery {
				t.Fatalf("SetCursor(%q) = %v", bad, err)
			}
		}
	})
}

func FuzzSetCursor(f *testing.F) {
	pf := plantstore.PlantFilter{Sort: plantstore.SortName}
	f.Add(pf.Cursor(&plantstore.Plant{ID: 1, Name: "x"}))
	f.Add("123")
	f.Fuzz(func(t *testing.T, s string) {
		for sort := range plantstore.PlantSort(6) {
			g := plantstore.PlantFilter{Sort: sort}
			if err := g.SetCursor(s); err != nil && plantstore.ErrorCode(err) != plantstore.CodeInvalidQuery {
				t.Fatalf("SetCursor(%q): %v", s, err)
			}
		}
	})
}

func TestErrorCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int32
	}{
		{"Nil", nil, 0},
		{"Domain", plantstore.Errorf(plantstore.CodeConflict, "x"), plantstore.CodeConflict},
		{"Wrapped", wrap(plantstore.Errorf(plantstore.CodeNotFound, "x")), plantstore.CodeNotFound},
		{"Other", errString("boom"), plantstore.CodeInternal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := plantstore.ErrorCode(tt.err), tt.want; got != want {
				t.Fatalf("ErrorCode(%v) = %d, want %d", tt.err, got, want)
			}
		})
	}
}

func TestCodesStatus(t *testing.T) {
	for _, c := range plantstore.Codes {
		e := plantstore.Errorf(c, "x")
		if got, want := e.Status(), int(c/100); got != want {
			t.Fatalf("Errorf(%d).Status() = %d, want %d", c, got, want)
		}
		if s := e.Status(); s < 400 || s > 599 {
			t.Fatalf("code %d maps to status %d, not an error status", c, s)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

type wrapped struct{ err error }

func (w wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

func wrap(err error) error { return wrapped{err} }
