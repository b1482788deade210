package textsearch_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/textsearch"
)

func ptr[T any](v T) *T { return &v }

func TestWords(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  -*()\" ", nil},
		{"Monstera deliciosa", []string{"monstera", "deliciosa"}},
		{"Café au LAIT, café!", []string{"cafe", "au", "lait"}},
		{"CAFÉ", []string{"cafe"}},
		{"cafe\u0301", []string{"cafe"}}, // a combining accent, decomposed already
		{"crème brûlée", []string{"creme", "brulee"}},
		{"Ångström", []string{"angstrom"}},
		{"İstanbul", []string{"istanbul"}},
		{"ﬁcus", []string{"ficus"}},                       // a ligature, compatibility-decomposed
		{"20℃ Ｍonstera", []string{"20", "c", "monstera"}}, // upper case made by decomposition
		{"R2D2 plant-42", []string{"r2d2", "plant", "42"}},
		{"aloe_vera o'brien", []string{"aloe", "vera", "o", "brien"}},
		{"Фикус Бенджамина", []string{"фикус", "бенджамина"}},
		{"盆栽 bonsai", []string{"盆栽", "bonsai"}},
		{"mon* OR -del NEAR(x) a:b & c | d ! ^e", []string{"mon", "or", "del", "near", "x", "a", "b", "c", "d", "e"}},
		{"\xff bad", []string{"\ufffd", "bad"}[1:]},
	} {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, textsearch.Words(tt.in)); diff != "" {
				t.Fatalf("Words(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestDocument(t *testing.T) {
	for _, tt := range []struct {
		name string
		tag  *string
		want string
	}{
		{"Monstera deliciosa", nil, " monstera deliciosa "},
		{"Monstera", ptr("monstera green"), " monstera green "},
		{"---", nil, ""},
		{"---", ptr("Café"), " cafe "},
	} {
		if got := textsearch.Document(tt.name, tt.tag); got != tt.want {
			t.Fatalf("Document(%q, %v) = %q, want %q", tt.name, tt.tag, got, tt.want)
		}
	}
}
