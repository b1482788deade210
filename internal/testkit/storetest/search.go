package storetest

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// The cases of this file find plants: search words, tag and time filters,
// the six orders, keyset pages and counts, on the row store. The same
// table runs on every backend, so a query gives the same plants in the
// same order on each.

// searchT0 is the creation time the search plants are placed after, to the
// microsecond.
var searchT0 = time.Date(2024, 5, 1, 9, 0, 0, 1000, time.UTC)

// at returns searchT0 plus sec seconds.
func at(sec int) time.Time { return searchT0.Add(time.Duration(sec) * time.Second) }

// searchPlants returns the plants the search table queries: alice's, whose
// names and tags exercise case, accents, word prefixes, digits, other
// scripts, separators, duplicate names, code-point order and equal
// creation times; and a few of bob's, which no query of alice's may see.
// Odd ids were changed after their creation (UpdatedAt later).
func searchPlants() []*plantstore.Plant {
	type row struct {
		owner   string
		id      int64
		name    string
		tag     *string
		created time.Time
	}
	rows := []row{
		{"alice", 1, "Monstera deliciosa", ptr("green"), at(10)},
		{"alice", 2, "MONSTERA", nil, at(10)}, // created with 1
		{"alice", 3, "monstera adansonii", ptr("green"), at(5)},
		{"alice", 4, "Café au lait", ptr("dahlia"), at(20)},
		{"alice", 5, "crème brûlée", nil, at(20)}, // created with 4
		{"alice", 6, "Ångström", ptr("physics"), at(1)},
		{"alice", 7, "R2D2", ptr("droid"), at(30)},
		{"alice", 8, "plant 42", nil, at(30).Add(time.Microsecond)}, // a microsecond after 7
		{"alice", 9, "Фикус", ptr("комнатный"), at(2)},
		{"alice", 10, "Ελιά", nil, at(3)},
		{"alice", 11, "盆栽", ptr("bonsai"), at(4)},
		{"alice", 12, "rubber-plant", ptr("ficus"), at(40)},
		{"alice", 13, "aloe_vera", ptr("succulent"), at(41)},
		{"alice", 14, "o'brien", nil, at(42)},
		{"alice", 15, "Zebra plant", ptr("striped"), at(43)},
		{"alice", 16, "aloe", ptr("succulent"), at(44)},
		{"alice", 17, "Fern", ptr("green"), at(50)},
		{"alice", 18, "Fern", ptr("green"), at(50)}, // 17 again
		{"alice", 19, "Fern", nil, at(49)},
		{"alice", 20, "ﬁcus lyrata", ptr("ficus"), at(60)}, // a ligature: "fi"
		{"alice", 21, "Ficus benjamina", ptr("ficus"), at(61)},
		{"alice", 22, "Near the window", ptr("OR"), at(70)},
		{"alice", 23, "NOT a plant", ptr("and"), at(71)},
		{"alice", 24, "Cactus (spiky)", ptr("desert"), at(72)},
		{"alice", 25, "a*b", ptr("50%"), at(73)},
		{"alice", 26, `"quoted" name`, nil, at(74)},
		{"alice", 27, "x:y", ptr("key:value"), at(75)},
		{"alice", 28, "Mon-Del", nil, at(76)},
		{"alice", 29, "🌿", nil, at(77)}, // no word at all
		{"alice", 30, "Ivy", ptr(""), at(78)},
		{"alice", 31, "İstanbul tulip", nil, at(79)},
		{"alice", 32, "Straße palm", nil, at(80)},
		{"alice", 33, "cafe", nil, at(81)},
		{"alice", 34, "CAFÉ NOIR", ptr("dahlia"), at(82)},
		{"alice", 35, "Tomato 2", ptr("vegetable"), at(90)},
		{"alice", 36, "Tomato 10", ptr("vegetable"), at(90)}, // created with 35
		{"alice", 37, "basil", ptr("herb"), at(91)},
		{"alice", 38, "Basil", ptr("herb"), at(92)},
		{"alice", 39, "éclair", nil, at(93)},
		{"alice", 40, "zz top", nil, at(0)},
		{"alice", 41, "_hidden", nil, at(94)},
		{"alice", 42, "123 numbers", nil, at(95)},
		{"alice", 43, "Pot 10m²", nil, at(96)},          // "²" folds to "2"
		{"alice", 44, "Ｍｏｎｓｔｅｒａ", ptr("green"), at(97)}, // full width

		{"bob", 1, "Monstera deliciosa", ptr("green"), at(10)},
		{"bob", 2, "Café", ptr("dahlia"), at(20)},
		{"bob", 3, "Fern", ptr("green"), at(50)},
		{"bob", 100, "R2D2", ptr("droid"), at(30)},
	}
	plants := make([]*plantstore.Plant, len(rows))
	for i, r := range rows {
		p := &plantstore.Plant{Owner: r.owner, ID: r.id, Name: r.name, Tag: r.tag, CreatedAt: r.created, UpdatedAt: r.created}
		if r.id%2 == 1 {
			p.UpdatedAt = r.created.Add(time.Duration(r.id) * time.Hour)
		}
		plants[i] = p
	}
	return plants
}

// searchCase is a query of the search table and its answer: the ids of
// the plants, in order.
type searchCase struct {
	name string
	f    plantstore.PlantFilter // Owner "alice" when empty; Limit the test's
	want []int64
}

// q returns the words of a search query, as the service makes them.
func q(s string) []string { return textsearch.Words(s) }

// ids returns its arguments: a list of plant ids.
func ids(id ...int64) []int64 { return append([]int64{}, id...) }

// reversed returns a reversed copy of list: a descending order, ties by id
// descending, is exactly the ascending one reversed.
func reversed(list []int64) []int64 {
	out := slices.Clone(list)
	slices.Reverse(out)
	return out
}

// alice's 44 plants in each ascending order.
var (
	searchByID        = []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44}
	searchByName      = []int64{26, 42, 38, 34, 24, 4, 17, 18, 19, 21, 30, 2, 28, 1, 23, 22, 43, 7, 32, 36, 35, 15, 41, 25, 16, 13, 37, 33, 5, 3, 14, 8, 12, 27, 40, 6, 39, 31, 10, 9, 11, 20, 44, 29}
	searchByCreatedAt = []int64{40, 6, 9, 10, 11, 3, 1, 2, 4, 5, 7, 8, 12, 13, 14, 15, 16, 19, 17, 18, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 41, 42, 43, 44}
)

// searchCases is the search table, over searchPlants.
func searchCases() []searchCase {
	type f = plantstore.PlantFilter
	return []searchCase{
		// The orders: by code point for names ("Zebra" before "aloe",
		// "Tomato 10" before "Tomato 2", "🌿" last), ties by id in the
		// sort's direction (the three "Fern", 1 and 2 created together).
		{"SortID", f{}, searchByID},
		{"SortIDDesc", f{Sort: plantstore.SortIDDesc}, reversed(searchByID)},
		{"SortName", f{Sort: plantstore.SortName}, searchByName},
		{"SortNameDesc", f{Sort: plantstore.SortNameDesc}, reversed(searchByName)},
		{"SortCreatedAt", f{Sort: plantstore.SortCreatedAt}, searchByCreatedAt},
		{"SortCreatedAtDesc", f{Sort: plantstore.SortCreatedAtDesc}, reversed(searchByCreatedAt)},

		// Owners: ids are per owner; nobody sees another's plants.
		{"OwnerBob", f{Owner: "bob"}, ids(1, 2, 3, 100)},
		{"OwnerBobWords", f{Owner: "bob", Words: q("mon")}, ids(1)},
		{"OwnerBobSortNameDesc", f{Owner: "bob", Sort: plantstore.SortNameDesc}, ids(100, 1, 3, 2)},
		{"OwnerUnknown", f{Owner: "carol"}, ids()},
		{"OwnerCase", f{Owner: "Alice"}, ids()},
		{"OwnerUnknownWords", f{Owner: "carol", Words: q("fern")}, ids()},

		// Tags: any of them, exactly.
		{"Tag", f{Tags: []string{"green"}}, ids(1, 3, 17, 18, 44)},
		{"Tags", f{Tags: []string{"green", "ficus"}}, ids(1, 3, 12, 17, 18, 20, 21, 44)},
		{"TagsRepeated", f{Tags: []string{"herb", "herb"}}, ids(37, 38)},
		{"TagsOneUnknown", f{Tags: []string{"nope", "droid"}}, ids(7)},
		{"TagUnknown", f{Tags: []string{"nope"}}, ids()},
		{"TagCase", f{Tags: []string{"Green"}}, ids()},
		{"TagPrefix", f{Tags: []string{"gre"}}, ids()},
		{"TagEmpty", f{Tags: []string{""}}, ids(30)},
		{"TagCyrillic", f{Tags: []string{"комнатный"}}, ids(9)},
		{"TagPunctuation", f{Tags: []string{"key:value"}}, ids(27)},
		{"TagPercent", f{Tags: []string{"50%"}}, ids(25)},
		{"TagLikeWildcards", f{Tags: []string{"50_", "%", "_", "*"}}, ids()},
		{"TagQuote", f{Tags: []string{"' OR '1'='1", `"`}}, ids()},
		{"TagSortName", f{Tags: []string{"green"}, Sort: plantstore.SortName}, ids(17, 18, 1, 3, 44)},
		{"TagOwnerBob", f{Owner: "bob", Tags: []string{"green"}}, ids(1, 3)},

		// Creation time: both bounds exclusive, to the microsecond.
		{"CreatedBefore", f{CreatedBefore: at(10)}, ids(3, 6, 9, 10, 11, 40)},
		{"CreatedAfter", f{CreatedAfter: at(90)}, ids(37, 38, 39, 41, 42, 43, 44)},
		{"CreatedAfterEqualTimes", f{CreatedAfter: at(90).Add(-time.Microsecond), CreatedBefore: at(91)}, ids(35, 36)},
		{"CreatedBetweenExclusive", f{CreatedAfter: at(10), CreatedBefore: at(20)}, ids()},
		{"CreatedBetweenEdges", f{CreatedAfter: at(10).Add(-time.Microsecond), CreatedBefore: at(20).Add(time.Microsecond)}, ids(1, 2, 4, 5)},
		{"CreatedAfterMicrosecond", f{CreatedAfter: at(30), CreatedBefore: at(40)}, ids(8)},
		{"CreatedBeforeMicrosecond", f{CreatedAfter: at(20), CreatedBefore: at(30).Add(time.Microsecond)}, ids(7)},
		{"CreatedAfterNanosecond", f{CreatedAfter: at(30).Add(time.Nanosecond), CreatedBefore: at(31)}, ids(8)},
		{"CreatedAfterZone", f{CreatedAfter: at(94).In(elsewhere)}, ids(42, 43, 44)},
		{"CreatedAfterAll", f{CreatedAfter: at(97)}, ids()},
		{"CreatedBeforeAll", f{CreatedBefore: at(0)}, ids()},
		{"CreatedSortDesc", f{CreatedAfter: at(45), CreatedBefore: at(61), Sort: plantstore.SortCreatedAtDesc}, ids(20, 18, 17, 19)},

		// Words: each a prefix of a word of the name or the tag.
		{"Word", f{Words: q("monstera")}, ids(1, 2, 3, 44)},
		{"WordUpper", f{Words: q("MONSTERA")}, ids(1, 2, 3, 44)},
		{"WordMixedCase", f{Words: q("MoNsTeRa")}, ids(1, 2, 3, 44)},
		{"WordPrefix", f{Words: q("mon")}, ids(1, 2, 3, 28, 44)},
		{"WordNotInfix", f{Words: q("stera")}, ids()},
		{"WordNotSuffix", f{Words: q("ern")}, ids()},
		{"WordLongerThanWord", f{Words: q("monsteras")}, ids()},
		{"WordOneLetter", f{Words: q("z")}, ids(15, 40)},
		{"Words", f{Words: q("mon del")}, ids(1, 28)},
		{"WordsOtherOrder", f{Words: q("del mon")}, ids(1, 28)},
		{"WordsAll", f{Words: q("monstera deliciosa green")}, ids(1)},
		{"WordsOneMissing", f{Words: q("monstera xyz")}, ids()},
		{"WordsRepeated", f{Words: q("fern FERN fern")}, ids(17, 18, 19)},
		{"WordsNameAndTag", f{Words: q("green mon")}, ids(1, 3, 44)},
		{"WordsSixteen", f{Words: q("m mo mon mons monst monste monster monstera d de del deli delic delici delicio deliciosa")}, ids(1)},
		{"WordTag", f{Words: q("succulent")}, ids(13, 16)},
		{"WordTagPrefix", f{Words: q("veg")}, ids(35, 36)},
		{"WordsTagPunctuation", f{Words: q("key val")}, ids(27)},
		{"WordAccentFolded", f{Words: q("cafe")}, ids(4, 33, 34)},
		{"WordAccentQuery", f{Words: q("CAFÉ")}, ids(4, 33, 34)},
		{"WordAccentsBoth", f{Words: q("crème brûlée")}, ids(5)},
		{"WordAccentsNone", f{Words: q("creme brul")}, ids(5)},
		{"WordRing", f{Words: q("angstrom")}, ids(6)},
		{"WordRingUpper", f{Words: q("ÅNGSTRÖM")}, ids(6)},
		{"WordAcute", f{Words: q("ECLAIR")}, ids(39)},
		{"WordDottedI", f{Words: q("istanbul")}, ids(31)},
		{"WordDottedIQuery", f{Words: q("İSTANBUL")}, ids(31)},
		{"WordSharpS", f{Words: q("straße")}, ids(32)},
		{"WordSharpSNotSS", f{Words: q("strasse")}, ids()},
		{"WordLigature", f{Words: q("fic")}, ids(12, 20, 21)},
		{"WordLigatureQuery", f{Words: q("ﬁcus")}, ids(12, 20, 21)},
		{"WordFullWidth", f{Words: q("ＭＯＮＳＴ")}, ids(1, 2, 3, 44)},
		{"WordCyrillic", f{Words: q("фик")}, ids(9)},
		{"WordCyrillicUpper", f{Words: q("ФИКУС")}, ids(9)},
		{"WordCyrillicTag", f{Words: q("Комнат")}, ids(9)},
		{"WordGreek", f{Words: q("ελ")}, ids(10)},
		{"WordGreekAccent", f{Words: q("ΕΛΙΆ")}, ids(10)},
		{"WordCJK", f{Words: q("盆")}, ids(11)},
		{"WordCJKWhole", f{Words: q("盆栽")}, ids(11)},
		{"WordCJKNotInfix", f{Words: q("栽")}, ids()},
		{"WordCJKTag", f{Words: q("bonsai")}, ids(11)},
		{"WordDigits", f{Words: q("42")}, ids(8)},
		{"WordDigitPrefix", f{Words: q("1")}, ids(36, 42, 43)},
		{"WordDigitAlone", f{Words: q("2")}, ids(35)},
		{"WordLettersDigits", f{Words: q("r2")}, ids(7)},
		{"WordLettersDigitsNotInfix", f{Words: q("d2")}, ids()},
		{"WordSuperscriptFolded", f{Words: q("10m2")}, ids(43)},
		{"WordHyphen", f{Words: q("rubber-plant")}, ids(12)},
		{"WordHyphenSecond", f{Words: q("plant")}, ids(8, 12, 15, 23)},
		{"WordUnderscore", f{Words: q("aloe_vera")}, ids(13)},
		{"WordUnderscoreSecond", f{Words: q("vera")}, ids(13)},
		{"WordUnderscoreLeading", f{Words: q("hidden")}, ids(41)},
		{"WordApostrophe", f{Words: q("o'brien")}, ids(14)},
		{"WordApostropheJoined", f{Words: q("obrien")}, ids()},
		{"WordParenthesis", f{Words: q("spiky")}, ids(24)},
		{"WordQuoted", f{Words: q("quoted")}, ids(26)},
		{"WordColon", f{Words: q("x:y")}, ids(27)},
		{"WordsNoWord", f{Words: q("🌿 fern")}, ids(17, 18, 19)},
		{"WordsSortName", f{Words: q("fern"), Sort: plantstore.SortName}, ids(17, 18, 19)},
		{"WordsSortNameDesc", f{Words: q("mon"), Sort: plantstore.SortNameDesc}, ids(44, 3, 1, 28, 2)},
		{"WordsSortCreatedAtDesc", f{Words: q("fern"), Sort: plantstore.SortCreatedAtDesc}, ids(18, 17, 19)},

		// Every character of a query is data: what is not a letter or a
		// digit separates words; operators of query languages are words.
		{"QueryEmpty", f{Words: q("")}, searchByID},
		{"QuerySeparators", f{Words: q("  ,;-_  ")}, searchByID},
		{"QueryEmoji", f{Words: q("🌿")}, searchByID},
		{"QueryStar", f{Words: q("*")}, searchByID},
		{"QueryQuoteDouble", f{Words: q(`"`)}, searchByID},
		{"QueryQuoteSingle", f{Words: q("'")}, searchByID},
		{"QueryMinus", f{Words: q("-")}, searchByID},
		{"QueryParenthesis", f{Words: q("(")}, searchByID},
		{"QueryCaret", f{Words: q("^")}, searchByID},
		{"QueryColon", f{Words: q(":")}, searchByID},
		{"QuerySymbols", f{Words: q(`&|!{}[]%\~<>@#$=+?/.`)}, searchByID},
		{"QueryOR", f{Words: q("OR")}, ids(22)},
		{"QueryAND", f{Words: q("AND")}, ids(23)},
		{"QueryNOT", f{Words: q("NOT")}, ids(23)},
		{"QueryNEAR", f{Words: q("NEAR")}, ids(22)},
		{"QueryNEARGroup", f{Words: q("NEAR(window the)")}, ids(22)},
		{"QueryQuotedOR", f{Words: q(`"a" OR "b"`)}, ids()},
		{"QueryQuotedPhrase", f{Words: q(`"quoted name"`)}, ids(26)},
		{"QueryStarOR", f{Words: q("mon* OR x")}, ids()},
		{"QueryStarSuffix", f{Words: q("mon*")}, ids(1, 2, 3, 28, 44)},
		{"QueryMinusWord", f{Words: q("monstera -deliciosa")}, ids(1)},
		{"QueryColumn", f{Words: q("name:fern")}, ids()},
		{"QueryColumnWord", f{Words: q("tag:green")}, ids()},
		{"QueryCaretWord", f{Words: q("^fern")}, ids(17, 18, 19)},
		{"QueryNotStar", f{Words: q("NOT *")}, ids(23)},
		{"QueryInjection", f{Words: q("fern' OR '1'='1")}, ids()},
		{"QueryInjectionComment", f{Words: q("fern'); DROP TABLE plants; --")}, ids()},
		{"QueryTSQuery", f{Words: q("fern & !green | (a <-> b):*")}, ids()},
		{"QueryAmpersand", f{Words: q("a&b")}, ids(25)},

		// Filters together.
		{"WordsTags", f{Words: q("fic"), Tags: []string{"ficus"}}, ids(12, 20, 21)},
		{"WordsTagsNarrow", f{Words: q("lyr"), Tags: []string{"ficus"}}, ids(20)},
		{"WordsTagOther", f{Words: q("monstera"), Tags: []string{"droid"}}, ids()},
		{"WordsCreatedAfter", f{Words: q("fern"), CreatedAfter: at(49)}, ids(17, 18)},
		{"WordsCreatedBefore", f{Words: q("mon"), CreatedBefore: at(76)}, ids(1, 2, 3)},
		{"WordsTagsCreated", f{Words: q("green"), Tags: []string{"green"}, CreatedAfter: at(5), CreatedBefore: at(97), Sort: plantstore.SortNameDesc}, ids(1, 18, 17)},
		{"AllFiltersSortCreatedAt", f{Words: q("t"), Tags: []string{"vegetable", "striped", "OR"}, CreatedAfter: at(0), Sort: plantstore.SortCreatedAt}, ids(22, 35, 36)},

		// A page after a position, which need not be a plant's.
		{"AfterID", f{After: &plantstore.PlantKey{ID: 40}}, ids(41, 42, 43, 44)},
		{"AfterIDDesc", f{Sort: plantstore.SortIDDesc, After: &plantstore.PlantKey{ID: 4}}, ids(3, 2, 1)},
		{"AfterName", f{Sort: plantstore.SortName, After: &plantstore.PlantKey{ID: 17, Name: "Fern"}, Words: q("fern")}, ids(18, 19)},
		{"AfterNameNotAPlant", f{Sort: plantstore.SortName, After: &plantstore.PlantKey{ID: 0, Name: "ﬀ"}}, ids(20, 44, 29)},
		{"AfterNameSameNameBigID", f{Sort: plantstore.SortName, After: &plantstore.PlantKey{ID: 1000, Name: "Fern"}, Words: q("f")}, ids(21, 12, 20)},
		{"AfterNameDesc", f{Sort: plantstore.SortNameDesc, After: &plantstore.PlantKey{ID: 18, Name: "Fern"}, Words: q("fern")}, ids(17)},
		{"AfterCreatedAt", f{Sort: plantstore.SortCreatedAt, After: &plantstore.PlantKey{ID: 17, CreatedAt: at(50)}, CreatedBefore: at(70)}, ids(18, 20, 21)},
		{"AfterCreatedAtDesc", f{Sort: plantstore.SortCreatedAtDesc, After: &plantstore.PlantKey{ID: 2, CreatedAt: at(10)}}, ids(1, 3, 11, 10, 9, 6, 40)},
		{"AfterCreatedAtNotAPlant", f{Sort: plantstore.SortCreatedAt, After: &plantstore.PlantKey{ID: 5, CreatedAt: at(30)}, CreatedBefore: at(41)}, ids(7, 8, 12)},
	}
}

// comparePlants orders a and b as s does: by its key, ties by id, in its
// direction.
func comparePlants(s plantstore.PlantSort, a, b *plantstore.Plant) int {
	c := 0
	switch s.Key() {
	case "name":
		c = strings.Compare(a.Name, b.Name)
	case "created_at":
		c = a.CreatedAt.Compare(b.CreatedAt)
	}
	if c == 0 {
		c = cmp.Compare(a.ID, b.ID)
	}
	if s.Desc() {
		c = -c
	}
	return c
}

// listPlants is b.ListPlants, failing the test on an error or a plant of
// another owner.
func listPlants(t *testing.T, b plantstore.Backend, f plantstore.PlantFilter) []*plantstore.Plant {
	t.Helper()
	plants, err := b.ListPlants(t.Context(), f)
	if err != nil {
		t.Fatalf("ListPlants(%+v): %v", f, err)
	}
	if len(plants) > f.Limit {
		t.Fatalf("ListPlants(%+v): %d plants, more than the limit", f, len(plants))
	}
	for _, p := range plants {
		if p.Owner != f.Owner {
			t.Fatalf("ListPlants(%+v): plant %d of %q", f, p.ID, p.Owner)
		}
	}
	return plants
}

// idsOf returns the ids of plants, in order.
func idsOf(plants []*plantstore.Plant) []int64 {
	out := []int64{}
	for _, p := range plants {
		out = append(out, p.ID)
	}
	return out
}

// countPlants is b.CountPlants, failing the test on an error.
func countPlants(t *testing.T, b plantstore.Backend, f plantstore.PlantFilter, estimate bool) int64 {
	t.Helper()
	n, err := b.CountPlants(t.Context(), f, estimate)
	if err != nil {
		t.Fatalf("CountPlants(%+v, estimate %v): %v", f, estimate, err)
	}
	return n
}

// insertQuiet inserts p with no event and fails the test unless it was
// stored.
func insertQuiet(t *testing.T, b plantstore.Backend, p *plantstore.Plant) {
	t.Helper()
	res, err := b.InsertPlant(t.Context(), p, nil)
	if err != nil {
		t.Fatalf("InsertPlant(%+v): %v", p, err)
	}
	if res.Existing != nil {
		t.Fatalf("InsertPlant(%+v) found %+v, want it stored", p, res.Existing)
	}
}

func testSearch(t *testing.T, bs Backends) {
	t.Run("Table", func(t *testing.T) {
		t.Parallel()
		testSearchTable(t, bs)
	})
	t.Run("Index", func(t *testing.T) {
		t.Parallel()
		testSearchIndex(t, bs)
	})
	t.Run("Created", func(t *testing.T) {
		t.Parallel()
		testSearchCreated(t, bs)
	})
	t.Run("PagesUnderWrites", func(t *testing.T) {
		t.Parallel()
		testSearchPagesUnderWrites(t, bs)
	})
}

// testSearchTable runs the search table on one backend holding
// searchPlants: each query's answer whole, in pages of 3 (each after the
// last plant of the one before), and its counts, exact and estimated.
func testSearchTable(t *testing.T, bs Backends) {
	b := bs.Open(t)
	plants := searchPlants()
	// Inserted in an order that is none of the sorts.
	for _, i := range rand.New(rand.NewPCG(30, 1)).Perm(len(plants)) {
		insertQuiet(t, b, plants[i])
	}
	// Stored as given: the fields, UpdatedAt and the texts byte for byte.
	var alice []*plantstore.Plant
	for _, p := range plants {
		if p.Owner == "alice" {
			alice = append(alice, p)
		}
	}
	if diff := gocmp.Diff(alice, listStore(t, b, "alice"), equateTime); diff != "" {
		t.Fatalf("alice's plants (-want +got):\n%s", diff)
	}

	for _, tt := range searchCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.f
			if f.Owner == "" {
				f.Owner = "alice"
			}
			all := f
			all.Limit = plantstore.MaxPageSize
			if diff := gocmp.Diff(tt.want, idsOf(listPlants(t, b, all))); diff != "" {
				t.Fatalf("ids (-want +got):\n%s", diff)
			}

			page := f
			page.Limit = 3
			paged := []int64{}
			for pages := 0; ; pages++ {
				if pages > len(tt.want)/page.Limit+1 {
					t.Fatalf("pages of %d do not end: %v so far", page.Limit, paged)
				}
				plants := listPlants(t, b, page)
				paged = append(paged, idsOf(plants)...)
				if len(plants) < page.Limit {
					break
				}
				page.After = plantstore.KeyOf(plants[len(plants)-1])
			}
			if diff := gocmp.Diff(tt.want, paged); diff != "" {
				t.Fatalf("ids over pages of %d (-want +got):\n%s", page.Limit, diff)
			}

			// A count is of the whole query: After and Limit aside.
			whole := all
			whole.After = nil
			want := int64(len(tt.want))
			if f.After != nil {
				want = int64(len(listPlants(t, b, whole)))
			}
			for _, estimate := range []bool{false, true} {
				if got := countPlants(t, b, whole, estimate); got != want {
					t.Fatalf("CountPlants(estimate %v) = %d, want %d", estimate, got, want)
				}
				paged := whole
				paged.Limit = 1
				paged.After = &plantstore.PlantKey{ID: 1, Name: "M", CreatedAt: at(50)}
				if got := countPlants(t, b, paged, estimate); got != want {
					t.Fatalf("CountPlants(estimate %v) with After and Limit 1 = %d, want %d", estimate, got, want)
				}
			}
		})
	}
}

// testSearchIndex: a change of name or tag changes what finds the plant at
// once, a delete takes it out of every answer and count, and UpdatedAt
// moves only with a change.
func testSearchIndex(t *testing.T, bs Backends) {
	b := bs.Open(t)
	ctx := t.Context()
	insertQuiet(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Golden pothos", Tag: ptr("vine"), CreatedAt: searchT0, UpdatedAt: searchT0})
	insertQuiet(t, b, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Golden barrel", Tag: ptr("cactus"), CreatedAt: searchT0, UpdatedAt: searchT0})
	// bob's plant 1 has the same words; alice's changes leave it.
	insertQuiet(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Golden pothos", Tag: ptr("vine"), CreatedAt: searchT0, UpdatedAt: searchT0})

	check := func(t *testing.T, query string, tags []string, want ...int64) {
		t.Helper()
		f := plantstore.PlantFilter{Owner: "alice", Words: q(query), Tags: tags, Limit: plantstore.MaxPageSize}
		if diff := gocmp.Diff(ids(want...), idsOf(listPlants(t, b, f))); diff != "" {
			t.Fatalf("q %q, tags %q: ids (-want +got):\n%s", query, tags, diff)
		}
		for _, estimate := range []bool{false, true} {
			if got := countPlants(t, b, f, estimate); got != int64(len(want)) {
				t.Fatalf("q %q, tags %q: CountPlants(estimate %v) = %d, want %d", query, tags, estimate, got, len(want))
			}
		}
	}
	update := func(t *testing.T, upd plantstore.PlantUpdate, want *plantstore.Plant, changed bool) {
		t.Helper()
		res, err := b.UpdatePlant(ctx, "alice", 1, upd, nil, updateEvent(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(want, res.Plant, equateTime); diff != "" {
			t.Fatalf("UpdatePlant answered (-want +got):\n%s", diff)
		}
		if diff := gocmp.Diff(want, findPlant(t, b, "alice", 1), equateTime); diff != "" {
			t.Fatalf("stored plant (-want +got):\n%s", diff)
		}
		if got := res.Seq != 0; got != changed {
			t.Fatalf("UpdatePlant wrote an event: %v, want %v", got, changed)
		}
	}
	check(t, "gold", nil, 1, 2)
	check(t, "pothos", nil, 1)
	want := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Golden pothos", Tag: ptr("vine"), CreatedAt: searchT0, UpdatedAt: searchT0}

	// A new name: the old words stop finding the plant, the new ones find
	// it; the tag still does.
	want.Name, want.UpdatedAt = "Silver satin", at(3600)
	update(t, plantstore.PlantUpdate{Name: ptr("Silver satin"), At: at(3600)}, want, true)
	check(t, "gold", nil, 2)
	check(t, "pothos", nil)
	check(t, "silver sat", nil, 1)
	check(t, "vine", nil, 1)
	check(t, "", []string{"vine"}, 1)

	// A new tag, likewise, for words and for the tag filter.
	want.Tag, want.UpdatedAt = ptr("climber"), at(7200)
	update(t, plantstore.PlantUpdate{SetTag: true, Tag: ptr("climber"), At: at(7200)}, want, true)
	check(t, "vine", nil)
	check(t, "climb", nil, 1)
	check(t, "", []string{"vine"})
	check(t, "", []string{"climber"}, 1)

	// A patch that changes nothing writes nothing: UpdatedAt stays.
	update(t, plantstore.PlantUpdate{Name: ptr("Silver satin"), SetTag: true, Tag: ptr("climber"), At: at(10800)}, want, false)
	update(t, plantstore.PlantUpdate{At: at(10800)}, want, false)
	check(t, "silver climber", nil, 1)

	// Other text with the same words is a change all the same.
	want.Name, want.UpdatedAt = "SILVER SATIN", at(14400)
	update(t, plantstore.PlantUpdate{Name: ptr("SILVER SATIN"), At: at(14400)}, want, true)
	check(t, "silver satin", nil, 1)

	// The tag removed: its words go.
	want.Tag, want.UpdatedAt = nil, at(18000)
	update(t, plantstore.PlantUpdate{SetTag: true, At: at(18000)}, want, true)
	check(t, "climb", nil)
	check(t, "", []string{"climber"})
	check(t, "silver", nil, 1)
	// The name order follows the new name.
	if diff := gocmp.Diff(ids(2, 1), idsOf(listPlants(t, b, plantstore.PlantFilter{Owner: "alice", Sort: plantstore.SortName, Limit: 10}))); diff != "" {
		t.Fatalf("by name (-want +got):\n%s", diff)
	}

	// Deleted: out of every answer and count.
	if _, err := b.DeletePlant(ctx, "alice", 1, nil); err != nil {
		t.Fatal(err)
	}
	check(t, "silver", nil)
	check(t, "", nil, 2)
	if _, err := b.DeletePlantIf(ctx, "alice", 2, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Golden barrel", Tag: ptr("cactus")}, nil); err != nil {
		t.Fatal(err)
	}
	check(t, "gold", nil)
	check(t, "", []string{"cactus"})
	check(t, "", nil)

	// A new plant with a freed id is found by its own words only.
	insertQuiet(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Rubber tree", CreatedAt: at(20000), UpdatedAt: at(20000)})
	check(t, "silver", nil)
	check(t, "gold", nil)
	check(t, "rub tr", nil, 1)

	// bob's plant never changed.
	bob := listPlants(t, b, plantstore.PlantFilter{Owner: "bob", Words: q("golden pothos vine"), Tags: []string{"vine"}, Limit: 10})
	if diff := gocmp.Diff(ids(1), idsOf(bob)); diff != "" {
		t.Fatalf("bob's plants (-want +got):\n%s", diff)
	}
}

// testSearchCreated: a plant the service created is found by its words
// as soon as the create returns, with creates of other writers at once
// (which may share commits).
func testSearchCreated(t *testing.T, bs Backends) {
	svc := openServices(t, bs)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := int64(w*each + i + 1)
				word := fmt.Sprintf("w%dx", id) // a prefix of no other plant's word
				if _, _, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: id, Name: "Orchid " + word}); err != nil {
					t.Error(err)
					return
				}
				f := plantstore.PlantFilter{Owner: "alice", Words: q("ORCHID " + word)}
				plants, more, err := svc.Plants.FindPlants(t.Context(), f)
				if err != nil || more || len(plants) != 1 || plants[0].ID != id {
					t.Errorf("plant %d just created: found %v (more %v), %v; want it alone", id, idsOf(plants), more, err)
					return
				}
				for _, mode := range []plantstore.CountMode{plantstore.CountExact, plantstore.CountEstimated} {
					if n, err := svc.Plants.CountPlants(t.Context(), f, mode); err != nil || n != 1 {
						t.Errorf("plant %d just created: count %s = %d, %v; want 1", id, mode, n, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	n, err := svc.Plants.CountPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Words: q("orchid")}, plantstore.CountExact)
	if err != nil || n != writers*each {
		t.Fatalf("count of every orchid = %d, %v; want %d", n, err, writers*each)
	}
}

// testSearchPagesUnderWrites pages through a query with Limit 5 while
// another goroutine inserts and deletes other plants, between the pages
// and during them: no plant is on two pages, pages follow the order, and
// each plant there from before the first page to after the last (the
// stable ones) is on exactly one.
func testSearchPagesUnderWrites(t *testing.T, bs Backends) {
	for _, tt := range []struct {
		name  string
		sort  plantstore.PlantSort
		words []string
	}{
		{"ID", plantstore.SortID, nil},
		{"CreatedAtDesc", plantstore.SortCreatedAtDesc, nil},
		{"NameWords", plantstore.SortName, q("pla")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bs.Open(t)
			rng := rand.New(rand.NewPCG(30, uint64(tt.sort)))
			// Twenty creation times and ten names: many ties, broken by id.
			plant := func(id int64, rng *rand.Rand) *plantstore.Plant {
				created := at(rng.IntN(20))
				return &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprintf("plant %c", 'a'+rng.IntN(10)), CreatedAt: created, UpdatedAt: created}
			}
			// The stable plants have ids 10, 20 … 600; the others, which
			// come and go, the ids in between.
			stable := map[int64]bool{}
			for id := int64(10); id <= 600; id += 10 {
				insertQuiet(t, b, plant(id, rng))
				stable[id] = true
			}
			taken := map[int64]bool{}
			var others []int64
			newOther := func(rng *rand.Rand) int64 {
				for {
					if id := 1 + rng.Int64N(610); id%10 != 0 && !taken[id] {
						taken[id] = true
						return id
					}
				}
			}
			for range 30 {
				id := newOther(rng)
				insertQuiet(t, b, plant(id, rng))
				others = append(others, id)
			}

			// The writer: two inserts and a delete, then it waits until the
			// reader has a page, and goes on while the reader reads the next.
			wrote := make(chan struct{})
			stop := make(chan struct{})
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				rng := rand.New(rand.NewPCG(31, uint64(tt.sort)))
				for {
					for range 2 {
						p := plant(newOther(rng), rng)
						if res, err := b.InsertPlant(t.Context(), p, nil); err != nil || res.Existing != nil {
							t.Errorf("writer: InsertPlant(%+v): %+v, %v", p, res, err)
							return
						}
						others = append(others, p.ID)
					}
					i := rng.IntN(len(others))
					if _, err := b.DeletePlant(t.Context(), "alice", others[i], nil); err != nil {
						t.Errorf("writer: DeletePlant(%d): %v", others[i], err)
						return
					}
					others = slices.Delete(others, i, i+1)
					select {
					case wrote <- struct{}{}:
					case <-stop:
						return
					}
				}
			}()
			defer func() {
				close(stop)
				<-writerDone
			}()

			f := plantstore.PlantFilter{Owner: "alice", Words: tt.words, Sort: tt.sort, Limit: 5}
			seen := map[int64]int{}
			var last *plantstore.Plant
			for pages := 0; ; pages++ {
				if pages > 200 {
					t.Fatalf("pages do not end: %d plants seen", len(seen))
				}
				plants := listPlants(t, b, f)
				for _, p := range plants {
					if seen[p.ID]++; seen[p.ID] > 1 {
						t.Fatalf("plant %d on two pages", p.ID)
					}
					if last != nil && comparePlants(tt.sort, last, p) >= 0 {
						t.Fatalf("plant %+v listed after %+v: out of %s order", p, last, tt.sort)
					}
					last = p
				}
				if len(plants) < f.Limit {
					break
				}
				f.After = plantstore.KeyOf(last)
				select {
				case <-wrote:
				case <-writerDone:
					t.FailNow() // the writer failed
				}
			}
			for _, id := range slices.Sorted(maps.Keys(stable)) {
				if seen[id] != 1 {
					t.Errorf("stable plant %d on %d pages, want 1", id, seen[id])
				}
			}
		})
	}
}
