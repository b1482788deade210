package plantstore_test

import (
	"strings"
	"testing"

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
	for _, tt := range []struct {
		name     string
		tag      *string
		wantCode int32
	}{
		{"OKNoTag", nil, 0},
		{"OKTag", ptr("green"), 0},
		{"OKEmptyTag", ptr(""), 0},
		{"OKLongTag", ptr(strings.Repeat("t", 1000)), 0}, // matches nothing
		{"ErrTagNUL", ptr("gr\x00een"), plantstore.CodeInvalidBody},
		{"ErrTagInvalidUTF8", ptr("\xff"), plantstore.CodeInvalidBody},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := plantstore.PlantFilter{Owner: "alice", Tag: tt.tag}
			if got, want := plantstore.ErrorCode(f.Validate()), tt.wantCode; got != want {
				t.Fatalf("ErrorCode(Validate()) = %d, want %d", got, want)
			}
		})
	}
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
