package sqlite

import (
	"context"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync"

	"github.com/plantstore/plantstore"
)

// Plant lists and counts (ListPlants, CountPlants): the filters of a
// PlantFilter over the plants table, its indexes and plant_search.
//
// A page is read in one of two ways.
//
//   - The ordered scan walks the owner's rows in the page's order from
//     After, through the primary key by id (by the tag's index for one tag
//     and no other filter), plants_owner_name_id by name,
//     plants_owner_created_id by creation time, and keeps those that match
//     the filters the walk does not bound itself (its residuals: tags,
//     creation time, words) until the page is full. The name index holds
//     every column, so that a walk by name reads no row: its order is not
//     the table's, a row read per entry would be a read anywhere in the
//     table. A walk by time reads each entry's row, most often next to the
//     one before (creation time follows ids). It costs the rows walked:
//     about Limit/density, small when matches are common, the owner's every
//     plant when they are rare.
//   - The selective read finds every match through its most selective
//     filter (words: plant_search; else tags: plants_owner_tag_id; else
//     creation time: plants_owner_created_id), checks the others, and
//     sorts. It costs the candidates, small when they are rare. By id, with
//     words and no other filter, it sorts plant_search's own copy of the
//     ids and reads only the page's plants.
//
// Without residuals the ordered scan is the answer (the list with no
// filter, by one tag by id, by a time range in time order). Otherwise the
// page starts with the ordered scan over a window of probeWindow rows; if
// that fills the page, or the window held every row left, its rows are the
// page. While the walk the page still takes at the density met so far
// stays within freeWalk rows, the walk goes on. Else the selective read's
// cost is estimated, as its candidates (counted, or from a sample of
// plant_search's docids when they are many) times selectiveCost rows of
// walk, and the walk goes on in windows that double while what it has
// walked plus what the page still takes at the density met so far stays
// within that cost; past it, the selective read makes the page. So a page whose matches are rare goes to the selective
// read after the first window, one whose matches are many but not near
// After walks on, and no page walks much more than the selective read
// would have cost. Every way gives the exact answer (the first Limit
// matches in order after After); the choice only moves the cost.
//
// A word w matches a plant whose words (textsearch.Document: folded words
// separated by single spaces, with one at each end) contain " "+w: every
// read checks exactly that, with instr. The full-text index only narrows the
// candidates: plant_search holds the same text, and FTS4's "simple"
// tokenizer splits it into the same words (it keeps runs of ASCII letters and
// digits and of bytes >= 0x80 together, and a word of Document holds nothing
// else), lower-casing ASCII letters in the text and in the query alike. So a
// plant with a word that begins with w has a token that begins with
// lower(w), which the prefix query "w*" matches: the index never drops a
// match, and instr drops what it adds (an ASCII upper-case letter left in
// a folded word). Each word is quoted as a phrase, so no word is ever an
// operator (OR, NOT, NEAR), and the query text and every value are bound
// parameters: nothing a client sends becomes SQL.

// The ordered scan's first window; the walk a page may take, as far as
// the density met so far foretells it, before the selective read is priced
// (pricing reads a sample of plant_search: about the cost of walking a
// thousand rows); the largest window, in rows walked; and the cost of a
// candidate of the selective read in rows of walk (a lookup of
// its row or two, where the walk steps through adjacent entries).
// Variables for the tests, which make them small to take every way with
// few plants.
var (
	probeWindow   int64 = 512
	freeWalk      int64 = 2048
	maxWindow     int64 = 100000
	selectiveCost int64 = 10
)

// The indexes of the orders (search_migration.go, 00001_init.sql).
const (
	idxName    = "plants_owner_name_id"    // (owner, name, id, tag, created_at, updated_at, words)
	idxCreated = "plants_owner_created_id" // (owner, created_at, id)
	idxTag     = "plants_owner_tag_id"     // (owner, tag, id)
)

// readColumns are the columns a page reads, qualified by p (plantRow):
// updated_at is NULL while it is created_at (most plants), which the
// driver hands over without boxing an integer.
const readColumns = `p.id, p.name, p.tag, p.created_at, nullif(p.updated_at, p.created_at)`

// query is a statement being built: its text (only while building it the
// first time: see build) and its arguments, ?1 being the owner's.
type query struct {
	text *strings.Builder // nil: the text is known, only args are wanted
	args []driver.Value
}

func (q *query) sql(parts ...string) {
	if q.text != nil {
		for _, s := range parts {
			q.text.WriteString(s)
		}
	}
}

// arg binds v and writes its placeholder.
func (q *query) arg(v driver.Value) {
	q.args = append(q.args, v)
	q.sql("?", strconv.Itoa(len(q.args)+1))
}

// shape is what a statement's text depends on: the same shape, the same
// text, whatever the values.
type shape struct {
	kind                        uint8
	sort                        plantstore.PlantSort
	after                       bool
	tags, words                 uint8
	createdAfter, createdBefore bool
}

// Kinds of statement.
const (
	kindScan             uint8 = iota // the ordered scan, whole (no residual)
	kindWindow                        // the ordered scan over a window (LIMIT bound)
	kindSentinel                      // the last row of a window
	kindSelect                        // the selective read
	kindCount                         // count(*)
	kindCountUpTo                     // count(*), at most EstimateExactUpTo+1
	kindSample                        // matches among a sample of docids
	kindCandidates                    // the selective read's candidates, counted
	kindSampleCandidates              // the candidates among a sample of docids
)

// queries caches each shape's text (a map with a struct key: a lookup
// allocates nothing).
var queries = struct {
	sync.RWMutex
	text map[shape]string
}{text: make(map[shape]string)}

// build returns the statement of f's shape of kind with f's arguments,
// building its text with fill the first time.
func build(kind uint8, f *plantstore.PlantFilter, fill func(q *query, f *plantstore.PlantFilter)) (string, []driver.Value) {
	s := shape{kind: kind, sort: f.Sort, after: f.After != nil,
		tags: uint8(len(f.Tags)), words: uint8(len(f.Words)),
		createdAfter: !f.CreatedAfter.IsZero(), createdBefore: !f.CreatedBefore.IsZero()}
	q := query{args: make([]driver.Value, 0, 4+len(f.Tags)+len(f.Words))}
	queries.RLock()
	text, ok := queries.text[s]
	queries.RUnlock()
	if ok {
		fill(&q, f)
		return text, q.args
	}
	q.text = new(strings.Builder)
	fill(&q, f)
	text = q.text.String()
	queries.Lock()
	queries.text[s] = text
	queries.Unlock()
	return text, q.args
}

func byName(f *plantstore.PlantFilter) bool {
	return f.Sort == plantstore.SortName || f.Sort == plantstore.SortNameDesc
}

func byCreated(f *plantstore.PlantFilter) bool {
	return f.Sort == plantstore.SortCreatedAt || f.Sort == plantstore.SortCreatedAtDesc
}

func timed(f *plantstore.PlantFilter) bool {
	return !f.CreatedAfter.IsZero() || !f.CreatedBefore.IsZero()
}

// orderedIndex is the index the ordered scan of f walks ("": the primary
// key). By id, the tag index is the range of one tag when it is the only
// filter; with others, the primary key, which holds every column to
// check, is walked rather than the tag index and a row read per entry.
func orderedIndex(f *plantstore.PlantFilter) string {
	switch {
	case byName(f):
		return idxName
	case byCreated(f):
		return idxCreated
	case len(f.Tags) == 1 && len(f.Words) == 0 && !timed(f):
		return idxTag
	}
	return ""
}

// residual reports whether f has a filter that the ordered scan must check
// row by row (the others bound its range).
func residual(f *plantstore.PlantFilter) bool {
	idx := orderedIndex(f)
	return len(f.Words) > 0 || (timed(f) && idx != idxCreated) || (len(f.Tags) > 0 && idx != idxTag)
}

// orderedRange writes the ordered scan's table and the conditions of its
// range: the owner, the tag of the tag index, the bounds of creation time
// when it walks them, and the position after f.After.
func orderedRange(q *query, f *plantstore.PlantFilter) {
	idx := orderedIndex(f)
	q.sql(`FROM plants p`)
	if idx != "" {
		q.sql(` INDEXED BY `, idx)
	}
	q.sql(` WHERE p.owner = ?1`)
	if idx == idxTag {
		q.sql(` AND p.tag = `)
		q.arg(f.Tags[0])
	}
	if idx == idxCreated {
		createdBounds(q, f, "p.", "")
	}
	keyset(q, f, "p.")
}

// residuals writes the conditions of f that orderedRange does not (each
// after " AND "), on the columns of t.
func residuals(q *query, f *plantstore.PlantFilter, t string) {
	idx := orderedIndex(f)
	if idx != idxTag {
		tagsIn(q, f, t, "")
	}
	if idx != idxCreated {
		createdBounds(q, f, t, "")
	}
	wordChecks(q, f, t)
}

// keyset writes the position after f.After in f.Sort's order, by a row
// value: (key, id) > (?, ?), or < descending.
func keyset(q *query, f *plantstore.PlantFilter, t string) {
	if f.After == nil {
		return
	}
	op := ` > `
	if f.Sort.Desc() {
		op = ` < `
	}
	switch {
	case byName(f):
		q.sql(` AND (`, t, `name, `, t, `id)`, op, `(`)
		q.arg(f.After.Name)
		q.sql(`, `)
		q.arg(f.After.ID)
		q.sql(`)`)
	case byCreated(f):
		q.sql(` AND (`, t, `created_at, `, t, `id)`, op, `(`)
		q.arg(f.After.CreatedAt.UnixNano())
		q.sql(`, `)
		q.arg(f.After.ID)
		q.sql(`)`)
	default:
		q.sql(` AND `, t, `id`, op)
		q.arg(f.After.ID)
	}
}

// order writes f.Sort's ORDER BY on t's columns, ties by id in the same
// direction.
func order(q *query, f *plantstore.PlantFilter, t string) {
	desc := ""
	if f.Sort.Desc() {
		desc = " DESC"
	}
	switch {
	case byName(f):
		q.sql(` ORDER BY `, t, `name`, desc, `, `, t, `id`, desc)
	case byCreated(f):
		q.sql(` ORDER BY `, t, `created_at`, desc, `, `, t, `id`, desc)
	default:
		q.sql(` ORDER BY `, t, `id`, desc)
	}
}

// tagsIn writes "tag IN (...)" when f has tags; plus is "+" to keep the
// planner from reading it through an index.
func tagsIn(q *query, f *plantstore.PlantFilter, t, plus string) {
	if len(f.Tags) == 0 {
		return
	}
	q.sql(` AND `, plus, t, `tag IN (`)
	for i, tag := range f.Tags {
		if i > 0 {
			q.sql(`, `)
		}
		q.arg(tag)
	}
	q.sql(`)`)
}

// createdBounds writes f's bounds of creation time (both exclusive).
func createdBounds(q *query, f *plantstore.PlantFilter, t, plus string) {
	if !f.CreatedAfter.IsZero() {
		q.sql(` AND `, plus, t, `created_at > `)
		q.arg(f.CreatedAfter.UnixNano())
	}
	if !f.CreatedBefore.IsZero() {
		q.sql(` AND `, plus, t, `created_at < `)
		q.arg(f.CreatedBefore.UnixNano())
	}
}

// wordChecks writes, for each word w of f, that words (t's words column)
// contain " "+w: the meaning of a word (see above).
func wordChecks(q *query, f *plantstore.PlantFilter, t string) {
	for _, w := range f.Words {
		q.sql(` AND instr(`, t, `words, `)
		q.arg(" " + w)
		q.sql(`) > 0`)
	}
}

// matchQuery is the full-text query of words: each a quoted prefix
// phrase, all required ("w1*" "w2*"). Words have no quote (they are made
// of letters and digits). Words shorter than matchMin bytes are left out
// when a longer one is there: such a prefix begins many words, whose
// doclists the index would merge (it has no prefix index), to narrow
// little; the instr checks still apply them.
func matchQuery(words []string) string {
	long := false
	for _, w := range words {
		long = long || len(w) >= matchMin
	}
	var b strings.Builder
	for _, w := range words {
		if long && len(w) < matchMin {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(w)
		b.WriteString(`*"`)
	}
	return b.String()
}

// matchMin is the length of the shortest word matchQuery prefers.
const matchMin = 3

// searchMatch writes the conditions of the candidates of f's words in
// plant_search s: its rows whose words match, of the owner, that contain
// every word.
func searchMatch(q *query, f *plantstore.PlantFilter) {
	q.sql(`s.words MATCH `)
	q.arg(matchQuery(f.Words))
	q.sql(` AND s.owner = ?1`)
	wordChecks(q, f, "s.")
}

// wordsOnly reports whether f filters by words and nothing else: the
// selective read and the counts then need only plant_search.
func wordsOnly(f *plantstore.PlantFilter) bool {
	return len(f.Words) > 0 && len(f.Tags) == 0 && !timed(f)
}

// The statements, one fill each.

func fillScan(q *query, f *plantstore.PlantFilter) {
	q.sql(`SELECT `, readColumns, ` `)
	orderedRange(q, f)
	order(q, f, "p.")
	q.sql(` LIMIT `)
	q.arg(int64(f.Limit))
}

// fillWindow: the window is the inner query (its LIMIT, f.Limit, counts
// the rows walked); the residuals are checked outside it. SQLite runs the
// inner query as a co-routine in its order, which the outer ORDER BY keeps
// without sorting. The primary key and the name index hold every column;
// a walk of the time index reads each entry's row, most often next to the
// previous one's (creation time follows ids). The outer LIMIT is the
// second argument after the window's (see window).
func fillWindow(q *query, f *plantstore.PlantFilter) {
	q.sql(`SELECT w.id, w.name, w.tag, w.created_at, nullif(w.updated_at, w.created_at) FROM (SELECT p.id, p.name, p.tag, p.created_at, p.updated_at, p.words `)
	orderedRange(q, f)
	order(q, f, "p.")
	q.sql(` LIMIT `)
	q.arg(int64(f.Limit))
	q.sql(`) w WHERE 1`)
	residuals(q, f, "w.")
	order(q, f, "w.")
	q.sql(` LIMIT ?`, strconv.Itoa(len(q.args)+2))
}

// fillSentinel returns the key of the f.Limit-th row of the walk (none
// when the walk has fewer rows): the end of a window of f.Limit rows.
func fillSentinel(q *query, f *plantstore.PlantFilter) {
	key := "p.id"
	switch {
	case byName(f):
		key = "p.name"
	case byCreated(f):
		key = "p.created_at"
	}
	q.sql(`SELECT p.id, `, key, ` `)
	orderedRange(q, f)
	order(q, f, "p.")
	q.sql(` LIMIT 1 OFFSET `)
	q.arg(int64(f.Limit - 1))
}

// fillSelect: the selective read.
func fillSelect(q *query, f *plantstore.PlantFilter) {
	switch {
	case wordsOnly(f) && !byName(f) && !byCreated(f):
		// By id: plant_search's ids sorted, the page's rows read.
		q.sql(`SELECT `, readColumns, ` FROM (SELECT s.id FROM plant_search s WHERE `)
		searchMatch(q, f)
		keyset(q, f, "s.")
		order(q, f, "s.")
		q.sql(` LIMIT `)
		q.arg(int64(f.Limit))
		q.sql(`) w CROSS JOIN plants p ON p.owner = ?1 AND p.id = w.id`)
		order(q, f, "w.")
		return
	case len(f.Words) > 0:
		q.sql(`SELECT `, readColumns, ` FROM plant_search s CROSS JOIN plants p ON p.owner = ?1 AND p.id = s.id WHERE `)
		searchMatch(q, f)
		tagsIn(q, f, "p.", "+")
		createdBounds(q, f, "p.", "+")
	case len(f.Tags) > 0:
		q.sql(`SELECT `, readColumns, ` FROM plants p INDEXED BY `, idxTag, ` WHERE p.owner = ?1`)
		tagsIn(q, f, "p.", "")
		createdBounds(q, f, "p.", "+")
	default:
		q.sql(`SELECT `, readColumns, ` FROM plants p INDEXED BY `, idxCreated, ` WHERE p.owner = ?1`)
		createdBounds(q, f, "p.", "")
	}
	keyset(q, f, "p.")
	order(q, f, "p.")
	q.sql(` LIMIT `)
	q.arg(int64(f.Limit))
}

// countFrom writes the FROM and WHERE of a count of f's matches: words
// through plant_search (alone when f has no other filter), else an index
// alone (tags: the tag index; else the time index, the smallest that
// bounds a time range).
func countFrom(q *query, f *plantstore.PlantFilter) {
	switch {
	case wordsOnly(f):
		q.sql(`FROM plant_search s WHERE `)
		searchMatch(q, f)
	case len(f.Words) > 0:
		q.sql(`FROM plant_search s WHERE `)
		searchMatch(q, f)
		q.sql(` AND EXISTS (SELECT 1 FROM plants p WHERE p.owner = ?1 AND p.id = s.id`)
		tagsIn(q, f, "p.", "+")
		createdBounds(q, f, "p.", "+")
		q.sql(`)`)
	case len(f.Tags) > 0:
		q.sql(`FROM plants p INDEXED BY `, idxTag, ` WHERE p.owner = ?1`)
		tagsIn(q, f, "p.", "")
		createdBounds(q, f, "p.", "+")
	default:
		q.sql(`FROM plants p INDEXED BY `, idxCreated, ` WHERE p.owner = ?1`)
		createdBounds(q, f, "p.", "")
	}
}

func fillCount(q *query, f *plantstore.PlantFilter) {
	q.sql(`SELECT count(*) `)
	countFrom(q, f)
}

func fillCountUpTo(q *query, f *plantstore.PlantFilter) {
	q.sql(`SELECT count(*) FROM (SELECT 1 `)
	countFrom(q, f)
	q.sql(` LIMIT `, strconv.Itoa(plantstore.EstimateExactUpTo+1), `)`)
}

// The sample of an estimated count: sampleRuns runs of sampleRun
// consecutive docids each, at places drawn by a fixed pseudo-random
// sequence (MINSTD), so that the same database gives the same estimate;
// consecutive docids share pages of plant_search's content, so a run costs
// a page or two. When the last docid is at most sampleRuns*sampleRun, the
// runs are 1.. in order: every plant.
const (
	sampleRuns = 16
	sampleRun  = 64
)

// fillSample counts the owner's plants matching f in the sample and
// returns the last docid. Words and the owner are checked on
// plant_search's copy; tags and times on the plant's row.
func fillSample(q *query, f *plantstore.PlantFilter) {
	run := sampleWith(q)
	q.sql(`SELECT (SELECT count(*) FROM s CROSS JOIN plant_search_content c ON c.docid BETWEEN s.first AND s.first + `, run, ` - 1`)
	if len(f.Tags) > 0 || timed(f) {
		q.sql(` CROSS JOIN plants p ON p.owner = ?1 AND p.id = c.c2id`)
	}
	q.sql(` WHERE +c.c1owner = ?1`) // + keeps the planner on the docid ranges
	tagsIn(q, f, "p.", "+")
	createdBounds(q, f, "p.", "+")
	sampledWords(q, f)
	q.sql(`), last FROM k`)
}

// fillSampleCandidates counts the plants of any owner whose words match
// in the sample (the selective read's candidates: what a page prices it
// by) and returns the last docid.
func fillSampleCandidates(q *query, f *plantstore.PlantFilter) {
	run := sampleWith(q)
	q.sql(`SELECT (SELECT count(*) FROM s CROSS JOIN plant_search_content c ON c.docid BETWEEN s.first AND s.first + `, run, ` - 1 WHERE 1`)
	sampledWords(q, f)
	q.sql(`), last FROM k`)
}

// sampleWith writes the WITH clause of the sample: k, the last docid; s,
// the first docid of each run. It returns the run's length as text.
func sampleWith(q *query) string {
	runs, run := strconv.Itoa(sampleRuns), strconv.Itoa(sampleRun)
	q.sql(`WITH RECURSIVE k(last) AS MATERIALIZED (SELECT coalesce(max(docid), 0) FROM plant_search_content),
r(i, x) AS (SELECT 1, 20261129 UNION ALL SELECT i + 1, x * 48271 % 2147483647 FROM r WHERE i < `, runs, `),
s(first) AS (SELECT CASE WHEN k.last <= `, runs, ` * `, run, ` THEN (r.i - 1) * `, run, ` + 1 ELSE 1 + r.x % (k.last - `, run, ` + 1) END FROM k, r)
`)
	return run
}

// sampledWords writes, for each word w of f, that the sampled row's
// words contain " "+w.
func sampledWords(q *query, f *plantstore.PlantFilter) {
	for _, w := range f.Words {
		q.sql(` AND instr(c.c0words, `)
		q.arg(" " + w)
		q.sql(`) > 0`)
	}
}

// ListPlants returns up to f.Limit of the owner's plants matching f, in
// f.Sort's order after f.After (see above). The page's plants share one
// backing array, and their tags another.
func (db *DB) ListPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, error) {
	if f.Limit <= 0 {
		return []*plantstore.Plant{}, nil
	}
	pg := newPage(f.Owner, f.Limit)
	if !residual(&f) {
		text, args := build(kindScan, &f, fillScan)
		if err := db.queryPlants(ctx, text, false, pg.add, f.Owner, args...); err != nil {
			return nil, wrap("list plants", err)
		}
		traceList("scan")
		return pg.plants(), nil
	}
	done, err := db.listWindows(ctx, &f, pg)
	if err != nil {
		return nil, wrap("list plants", err)
	}
	if !done {
		pg = newPage(f.Owner, f.Limit)
		text, args := build(kindSelect, &f, fillSelect)
		if err := db.queryPlants(ctx, text, false, pg.add, f.Owner, args...); err != nil {
			return nil, wrap("list plants", err)
		}
		traceList("select")
	}
	return pg.plants(), nil
}

// traceList is told which way each page took (tests).
var traceList = func(way string) {}

// windowWay names the way of a page the windows finished: by the first or
// the second, full or at the end of the rows.
func windowWay(second, end bool) string {
	switch {
	case second && end:
		return "windows end"
	case second:
		return "windows"
	case end:
		return "window end"
	}
	return "window"
}

// listWindows reads f's page into pg by the ordered scan over windows, and
// reports whether it is whole; if not, the selective read is the cheaper
// way to finish it (see above).
func (db *DB) listWindows(ctx context.Context, f *plantstore.PlantFilter, pg *page) (done bool, err error) {
	after, walk := f.After, probeWindow
	var walked, budget int64 = 0, -1 // budget: the selective read's cost, once known
	for n := 0; ; n++ {
		if err := db.window(ctx, f, after, walk, pg); err != nil {
			return false, err
		}
		if pg.len() == f.Limit {
			traceList(windowWay(n > 0, false))
			return true, nil
		}
		end, err := db.sentinel(ctx, f, after, walk)
		if err != nil {
			return false, err
		}
		if end == nil { // the window held every row left
			traceList(windowWay(n > 0, true))
			return true, nil
		}
		walked += walk
		found := int64(pg.len())
		more := (int64(f.Limit) - found) * walked / (found + 1) // rows of walk the page still takes, by this far
		if walked+more <= freeWalk {
			// Walking on costs less than pricing the selective read.
			after, walk = end, min(max(2*walk, 2*more), maxWindow)
			continue
		}
		if budget < 0 {
			c, err := db.candidates(ctx, f)
			if err != nil {
				return false, err
			}
			budget = c * selectiveCost
		}
		if walked+more > budget {
			return false, nil
		}
		after, walk = end, min(max(2*walk, 2*more), budget-walked, maxWindow)
	}
}

// candidates estimates how many candidates the selective read of f reads:
// plant_search's matches of the words (of every owner), from the sample
// when it finds many, else counted (the index's doclists alone), up to
// maxCandidates; without words, the entries of the tags or of the time
// range in their index, counted up to maxCandidates.
func (db *DB) candidates(ctx context.Context, f *plantstore.PlantFilter) (int64, error) {
	if len(f.Words) > 0 {
		s, err := db.sample(ctx, f, kindSampleCandidates, fillSampleCandidates)
		if err != nil {
			return 0, err
		}
		switch {
		case s.last <= sampleRuns*sampleRun:
			return s.n, nil // every plant
		case s.n >= 20:
			return s.n * s.last / (sampleRuns * sampleRun), nil
		}
	}
	text, args := build(kindCandidates, f, fillCandidates)
	return db.count(ctx, text, f.Owner, args)
}

// maxCandidates bounds the count of candidates (it walks them).
const maxCandidates = 100000

func fillCandidates(q *query, f *plantstore.PlantFilter) {
	q.sql(`SELECT count(*) FROM (SELECT 1 FROM `)
	switch {
	case len(f.Words) > 0:
		q.sql(`plant_search s WHERE s.words MATCH `)
		q.arg(matchQuery(f.Words))
		q.sql(` AND ?1 IS NOT NULL`) // every owner's: the read's work
	case len(f.Tags) > 0:
		q.sql(`plants p INDEXED BY `, idxTag, ` WHERE p.owner = ?1`)
		tagsIn(q, f, "p.", "")
	default:
		q.sql(`plants p INDEXED BY `, idxCreated, ` WHERE p.owner = ?1`)
		createdBounds(q, f, "p.", "")
	}
	q.sql(` LIMIT `, strconv.Itoa(maxCandidates), `)`)
}

// window appends to pg the matches of f among the walk rows after after.
func (db *DB) window(ctx context.Context, f *plantstore.PlantFilter, after *plantstore.PlantKey, walk int64, pg *page) error {
	wf := *f
	wf.After, wf.Limit = after, int(walk)
	text, args := build(kindWindow, &wf, fillWindow)
	args = append(args, int64(f.Limit-pg.len()))
	return db.queryPlants(ctx, text, false, pg.add, f.Owner, args...)
}

// sentinel returns the key of the walk-th row after after in f's walk
// (nil: there are fewer).
func (db *DB) sentinel(ctx context.Context, f *plantstore.PlantFilter, after *plantstore.PlantKey, walk int64) (*plantstore.PlantKey, error) {
	wf := *f
	wf.After, wf.Limit = after, int(walk)
	text, args := build(kindSentinel, &wf, fillSentinel)
	var end *plantstore.PlantKey
	err := db.queryPlants(ctx, text, true, func(row []driver.Value) {
		end = &plantstore.PlantKey{}
		end.ID, _ = row[0].(int64)
		switch v := row[1].(type) {
		case string:
			end.Name = v
		case int64:
			if byCreated(f) {
				end.CreatedAt = fromNanos(v)
			}
		}
	}, f.Owner, args...)
	return end, err
}

// page gathers the rows of a page: its plants in one backing array, their
// tags in another.
type page struct {
	owner string
	ps    []plantstore.Plant
	tags  []string
}

func newPage(owner string, limit int) *page {
	n := min(limit, 128)
	return &page{owner: owner, ps: make([]plantstore.Plant, 0, n), tags: make([]string, 0, n)}
}

func (pg *page) len() int { return len(pg.ps) }

// add reads a row of readColumns.
func (pg *page) add(row []driver.Value) {
	pg.ps = append(pg.ps, plantstore.Plant{Owner: pg.owner})
	t, ok := plantRow(&pg.ps[len(pg.ps)-1], row)
	if ok {
		pg.ps[len(pg.ps)-1].Tag = tagged
	}
	pg.tags = append(pg.tags, t)
}

func (pg *page) plants() []*plantstore.Plant {
	out := make([]*plantstore.Plant, len(pg.ps))
	for i := range pg.ps {
		if pg.ps[i].Tag == tagged {
			pg.ps[i].Tag = &pg.tags[i] // one backing array for the page's tags
		}
		out[i] = &pg.ps[i]
	}
	return out
}

// CountPlants returns how many of the owner's plants match f (f.After and
// f.Limit aside).
//
// Exact: one count(*), through an index alone when the filters bound an
// index range (none, tags, a time range), else through plant_search
// (words; each candidate's row read when there are other filters too). Its
// cost grows with the matches, or the candidates: the owner's every plant
// for no filter.
//
// Estimated: exact while at most EstimateExactUpTo plants match, else at
// least EstimateExactUpTo+1, in bounded work:
//   - the sample (fillSample: sampleRuns runs of sampleRun docids) counts
//     the owner's plants that match in it, h; the estimate is h times the
//     last docid over the docids sampled. When there are no more docids
//     than the sample takes, it takes them all and the count is exact.
//   - when the sample found at least 10 matches and estimates 10 times
//     EstimateExactUpTo or more, that is the answer: with
//     EstimateExactUpTo or fewer matches the sample would have had to fall
//     on them ten times as often as on the other plants;
//   - else the matches are counted up to EstimateExactUpTo+1 as the exact
//     count does: exact below it, else the estimate (at least
//     EstimateExactUpTo+1).
func (db *DB) CountPlants(ctx context.Context, f plantstore.PlantFilter, estimate bool) (int64, error) {
	f.After, f.Limit = nil, 0
	if !estimate {
		text, args := build(kindCount, &f, fillCount)
		n, err := db.count(ctx, text, f.Owner, args)
		return n, wrap("count plants", err)
	}
	const upTo = plantstore.EstimateExactUpTo
	s, err := db.sample(ctx, &f, kindSample, fillSample)
	if err != nil {
		return 0, wrap("count plants", err)
	}
	const sampled = sampleRuns * sampleRun
	if s.last <= sampled {
		return s.n, nil // the sample took every docid: every plant
	}
	est := s.n * s.last / sampled
	if s.n >= 10 && est >= 10*upTo {
		return est, nil
	}
	text, args := build(kindCountUpTo, &f, fillCountUpTo)
	n, err := db.count(ctx, text, f.Owner, args)
	if err != nil {
		return 0, wrap("count plants", err)
	}
	if n <= upTo {
		return n, nil
	}
	return max(est, upTo+1), nil
}

// sampled is what a sample found: the plants it counted (fillSample's or
// fillSampleCandidates') and the last docid.
type sampled struct{ n, last int64 }

// sample runs fill, a statement of kind: fillSample or
// fillSampleCandidates.
func (db *DB) sample(ctx context.Context, f *plantstore.PlantFilter, kind uint8, fill func(*query, *plantstore.PlantFilter)) (s sampled, err error) {
	text, args := build(kind, f, fill)
	err = db.queryPlants(ctx, text, true, func(row []driver.Value) {
		s.n, _ = row[0].(int64)
		s.last, _ = row[1].(int64)
	}, f.Owner, args...)
	return s, err
}

// count runs a statement of one integer on the plant read pool.
func (db *DB) count(ctx context.Context, text, owner string, args []driver.Value) (int64, error) {
	var n int64
	err := db.queryPlants(ctx, text, true, func(row []driver.Value) { n, _ = row[0].(int64) }, owner, args...)
	return n, err
}
