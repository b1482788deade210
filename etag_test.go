package plantstore_test

import (
	"testing"

	"github.com/plantstore/plantstore"
)

// TestPlantETag: the ETag is a quoted strong tag of the content: the same
// for the same id, name and tag, whoever owns the plant and whenever it was
// made; different when any of them differs, an absent tag and an empty one
// included.
func TestPlantETag(t *testing.T) {
	base := plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")}
	same := base
	same.Owner = "bob"
	if got, want := same.ETag(), base.ETag(); got != want {
		t.Fatalf("owner changed the ETag: %s, %s", got, want)
	}
	seen := map[string]string{base.ETag(): "base"}
	for name, p := range map[string]plantstore.Plant{
		"id":        {ID: 2, Name: "Fern", Tag: ptr("green")},
		"name":      {ID: 1, Name: "Fern ", Tag: ptr("green")},
		"tag":       {ID: 1, Name: "Fern", Tag: ptr("Green")},
		"no tag":    {ID: 1, Name: "Fern"},
		"empty tag": {ID: 1, Name: "Fern", Tag: ptr("")},
		"shifted":   {ID: 1, Name: "Ferng", Tag: ptr("reen")},
	} {
		etag := p.ETag()
		if other, ok := seen[etag]; ok {
			t.Fatalf("%s has the ETag of %s: %s", name, other, etag)
		}
		seen[etag] = name
		if len(etag) != 34 || etag[0] != '"' || etag[33] != '"' {
			t.Fatalf("%s: ETag %s is not a quoted 32-digit tag", name, etag)
		}
	}
}

func TestMatchETag(t *testing.T) {
	const e = `"abc"`
	for _, tt := range []struct {
		list         string
		strong, weak bool
	}{
		{`"abc"`, true, true},
		{` "abc" `, true, true},
		{`*`, true, true},
		{`W/"abc"`, false, true},
		{`"x", "abc"`, true, true},
		{`"x","abc"`, true, true},
		{`"x", W/"abc"`, false, true},
		{`"abcd"`, false, false},
		{`abc`, false, false},
		{`"x" "abc"`, false, false}, // not a list
		{`"abc`, false, false},
		{``, false, false},
		{`"x", *`, false, false}, // * only alone
		// Parsed whole and strictly: a list with any
		// malformed member names nothing, not even a tag before it.
		{`"abc"junk`, false, false},
		{`"abc"x, "abc"`, false, false},
		{`"abc", junk`, false, false},
		{`"abc", "x`, false, false},
		{`"abc", "x" "y"`, false, false},
		{`"abc", W/x`, false, false},
		{`"abc", w/"x"`, false, false},
		{"\"abc\", \"a b\"", false, false},   // space is not etagc
		{"\"abc\", \"a\x01\"", false, false}, // nor a control
		{"\"abc\", \"a\x7f\"", false, false}, // nor DEL
		{`"abc"W/"x"`, false, false},
		{`*, "abc"`, false, false},
		{`"abc",*`, false, false},
		{`**`, false, false},
		// What the grammar allows still matches.
		{"\t\"abc\"\t", true, true},
		{`, ,"abc",,`, true, true},            // empty list elements
		{`"x" , "abc" `, true, true},          // OWS around commas
		{"\"x\xff!#~\", \"abc\"", true, true}, // obs-text and the edges of etagc
		{`"", "abc"`, true, true},             // an empty opaque tag
		{`,`, false, false},                   // an empty list
	} {
		if got := plantstore.MatchETag(tt.list, e, false); got != tt.strong {
			t.Errorf("MatchETag(%q, strong) = %v, want %v", tt.list, got, tt.strong)
		}
		if got := plantstore.MatchETag(tt.list, e, true); got != tt.weak {
			t.Errorf("MatchETag(%q, weak) = %v, want %v", tt.list, got, tt.weak)
		}
	}
}
