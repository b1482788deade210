package textsearch_test

import (
	"math/rand/v2"
	"strings"
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

// TestAppendWords: the allocation-free path of ASCII names and tags
// gives Document's words, after any text already in the buffer. (Not
// parallel: AllocsPerRun.)
func TestAppendWords(t *testing.T) {
	cases := [][2]*string{
		{ptr(""), nil}, {ptr("!!!"), ptr("")}, {ptr("Fern"), nil}, {ptr("fern FERN fErN"), ptr("Fern")},
		{ptr("Monstera deliciosa"), ptr("green")}, {ptr("R2-D2 r2_d2"), ptr("d2,R2")}, {ptr("a b a"), ptr("b c a")},
		{ptr("Café au lait"), ptr("cafe")}, {ptr("plain"), ptr("Ångström")}, {ptr("  x\ty\n"), ptr("x")},
		{ptr("o'brien"), ptr("O'Brien-Smith")}, {ptr("123 0123 123"), ptr("0123")},
	}
	r := rand.New(rand.NewPCG(5, 6))
	const alphabet = "aAbB09 -_'!.,zZ\t"
	for range 2000 {
		gen := func() string {
			b := make([]byte, r.IntN(12))
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			return string(b)
		}
		c := [2]*string{ptr(gen()), nil}
		if r.IntN(2) == 0 {
			c[1] = ptr(gen())
		}
		cases = append(cases, c)
	}
	var buf []byte
	for _, c := range cases {
		want := strings.Trim(textsearch.Document(*c[0], c[1]), " ")
		before := len(buf)
		buf = textsearch.AppendWords(buf, *c[0], c[1])
		if got := string(buf[before:]); got != want {
			t.Errorf("textsearch.AppendWords(%q, %v) = %q, want %q", *c[0], c[1], got, want)
		}
		if len(buf) > 1000 {
			buf = buf[:0]
		}
	}
	if n := testing.AllocsPerRun(100, func() { buf = textsearch.AppendWords(buf[:0], "Monstera deliciosa Monstera", ptr("Green")) }); n != 0 {
		t.Errorf("textsearch.AppendWords of ASCII: %v allocations, want 0", n)
	}
}
