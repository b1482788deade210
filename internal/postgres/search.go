package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// Plant search. A plant's search column is a tsvector of its words:
// textsearch.Document of its name and tag, made in Go and sent as text
// (the words joined by single spaces, searchText), which the statement
// turns into the vector with array_to_tsvector (searchOf, searchEnd): the
// lexemes are exactly those words, as the SQLite backend indexes them.
// PostgreSQL's own parser (to_tsvector) is never used: it splits, folds
// and stems by the database's configuration and locale, and would find
// other plants than SQLite does. A query word w is a prefix query 'w':*
// (searchQuery), which matches a lexeme that starts with w, byte for byte:
// a plant whose Document contains " "+w. The vector has no positions and
// no weights; a GIN index (plants_search) serves @@.
//
// CockroachDB (not tested here) has tsvector and inverted indexes, but, as
// far as its documentation says, not array_to_tsvector, ts_match_vq or
// EXPLAIN (FORMAT JSON), which this file uses.

// searchOf and searchEnd enclose the SQL of a text of searchText to make
// a plant's search vector: searchOf + "x" + searchEnd. string_to_array of
// the empty text is the empty array, whose vector is empty: a plant
// without a word.
const (
	searchOf  = `array_to_tsvector(string_to_array(`
	searchEnd = `, ' '))`
)

// searchText returns the words of a plant with name and tag, folded,
// without repeats, joined by single spaces ("" when there is none): what
// searchOf and searchEnd enclose.
func searchText(name string, tag *string) string {
	return strings.Trim(textsearch.Document(name, tag), " ")
}

// searchTexts sets words[i] to the searchText of plant(i), substrings of
// one string: for a batch of plants, two allocations.
func searchTexts(words []string, plant func(i int) *plantstore.Plant) {
	buf := make([]byte, 0, 24*len(words))
	ends := make([]int, len(words))
	for i := range words {
		p := plant(i)
		buf = textsearch.AppendWords(buf, p.Name, p.Tag)
		ends[i] = len(buf)
	}
	s, start := string(buf), 0
	for i, end := range ends {
		words[i], start = s[start:end], end
	}
}

// searchQuery returns the tsquery, as text, of a plant that has a word
// starting with each of words: 'w1':* & 'w2':*. The words of a query
// (textsearch.Words) are letters and digits only; a quote or a backslash
// would be escaped all the same, so no word is ever query syntax. An empty
// word, which any word starts with, is left out (see ListPlants).
func searchQuery(words []string) string {
	var b strings.Builder
	for _, w := range words {
		if w == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('\'')
		for i := 0; i < len(w); i++ {
			switch c := w[i]; c {
			case '\'':
				b.WriteString(`''`)
			case '\\':
				b.WriteString(`\\`)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteString("':*")
	}
	return b.String()
}

// A page of a search is found one of two ways. The search index (GIN)
// finds every plant with the words, which are then sorted (searchAll): its
// cost grows with the number of matches, N. A scan in the order's index
// reads plants in order until a page of them match: its cost grows with
// the plants it reads, about the page size times T/N when the matches are
// spread evenly among the T plants that the other filters leave. The
// planner chooses between the two from its estimates of N and T, which are
// good (the statistics of the search column keep the most common words; a
// prefix is estimated from the words it starts), but from costs that do
// not hold for the order by name: the rows of a name are anywhere in the
// table, so each row read in that order is a random page, which the
// planner, counting on a cache, takes for 50 times cheaper than finding
// one match through the search index, when it costs as much or more (10M
// plants, 9,700 with a word, a page by name: 1.3 s by the name index,
// 47 ms by the search index). And the matches are seldom spread evenly:
// by name, the plants whose name starts with the word are all in one
// place; two words may be found together much less often than each alone
// (never, for some), and an ordered scan for them then reads the whole
// table, seconds at 10M.
//
// So searchPlants asks the planner for N and T (two EXPLAINs, planning
// only, in one round trip) and chooses itself, with a cost per plant read
// in order measured against a cost per match (orderedCost): the search
// index when N² ≤ ratio × page × T; else a scan in order bounded to a
// window of plants, twice as many as the page should take, filtered by the
// search after. A window that does not fill the page is followed by one
// four times as large, after it, until the plants read reach maxWindow:
// then the search index finds the rest (searchPage). Neither way then reads much more
// than the cheaper of the two would have: at 10M plants of one owner, a
// page of a rare word or of a common one took 1 to 6 ms, two words 3 to
// 18, and the worst, a word on 10,000 to 40,000 of them sorted by name, 15
// to 170 (where the planner alone took 0.6 to 2 s).

// orderedCost is what reading one plant in the order of s costs, as a
// fraction of what finding and sorting one match through the search index
// costs: by id and creation time, plants are read in about the order they
// are stored (a page holds dozens of them); by name, each is a random
// page. Measured on 10M plants (1.5 GB of rows): with shared_buffers at
// 256MB, 0.15 µs and 8 µs a row against 5 µs a match; at 2GB, 0.14 µs
// and 1.7 µs against 3 µs. With the search checked on each row read in
// order, 0.2 µs (50,000 rows by id: 10 ms), against 2.3 µs a match (a
// page of a rare word, 644 matches: 1.5 ms). A misjudged search index costs
// in proportion to the matches, a misjudged ordered scan can cost the
// whole window and more: a small page's window misses its few matches
// often (a page of one, about one time in seven), and a miss reads the
// window again in a transaction, its end, and a window four times as
// large. So the ratio by id and time is 0.15, not the 0.09 of one row
// against one match, and the one for names leans to the search index.
func orderedCost(s plantstore.PlantSort) float64 {
	if s.Key() == "name" {
		return 1.5
	}
	return 0.15
}

// maxWindow bounds the plants that an ordered search reads in the order
// of s before it turns to the search index: at the rates of orderedCost,
// 0.15 s by id or time, 0.2 to 0.8 s by name.
func maxWindow(s plantstore.PlantSort) int {
	if s.Key() == "name" {
		return 100_000
	}
	return 1_000_000
}

// searchPlants returns the page of f, a filter with a search (see above).
func (db *DB) searchPlants(ctx context.Context, f *plantstore.PlantFilter) ([]*plantstore.Plant, error) {
	est, err := db.estimate(ctx, f, f.After)
	if err != nil {
		return nil, err
	}
	return db.searchPage(ctx, f, est, maxWindow(f.Sort))
}

// searchPage returns the page of f given its estimates, reading at most
// maxRead plants in order (in windows) before it turns to the search
// index.
//
// A window that does not fill the page is followed by more, each starting
// after the last plant of the one before: all of them must see the plants
// as of one moment, or a plant that a concurrent write moved out of a
// window before its end was found would be skipped. So when the first
// window falls short (seldom: it holds twice what the page should need),
// the windows run again, that one too, in one REPEATABLE READ, READ ONLY
// transaction (searchWindows).
func (db *DB) searchPage(ctx context.Context, f *plantstore.PlantFilter, est *estimates, maxRead int) ([]*plantstore.Plant, error) {
	n, t, limit := est.n, est.t, float64(f.Limit)
	if n*n <= orderedCost(f.Sort)*limit*t {
		return db.searchAll(ctx, db.pool, f, f.After, f.Limit, est)
	}
	window := int(min(max(2*limit*t/n, limit), float64(maxRead)))
	page, err := db.searchWindow(ctx, db.pool, f, f.After, window, f.Limit)
	if err != nil || len(page) == f.Limit {
		return page, err
	}
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) (err error) {
		page, err = db.searchWindows(ctx, tx, f, est, window, maxRead)
		return err
	})
	return page, err
}

// searchWindows returns the page of f from windows of plants in order, the
// first of window plants, each next one four times as large, until the
// page is full, the plants run out, or maxRead plants were read: then the
// search index finds the rest.
func (db *DB) searchWindows(ctx context.Context, q querier, f *plantstore.PlantFilter, est *estimates, window, maxRead int) ([]*plantstore.Plant, error) {
	var (
		page  []*plantstore.Plant
		after = f.After
		read  = 0
	)
	for {
		if read >= maxRead {
			rest, err := db.searchAll(ctx, q, f, after, f.Limit-len(page), est)
			return append(page, rest...), err
		}
		found, err := db.searchWindow(ctx, q, f, after, window, f.Limit-len(page))
		if err != nil {
			return nil, err
		}
		if page = append(page, found...); len(page) == f.Limit {
			return page, nil
		}
		end, err := db.windowEnd(ctx, q, f, after, window)
		if err != nil || end == nil {
			return page, err // nil: the window held every plant left
		}
		after, read, window = end, read+window, min(4*window, maxRead)
	}
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// searchWindow returns the plants of f that match its search among the
// window plants after `after` (in f.Sort's order) that match its other
// filters, at most limit of them: the window is a scan in order, bounded,
// and the search filters it.
func (db *DB) searchWindow(ctx context.Context, qr querier, f *plantstore.PlantFilter, after *plantstore.PlantKey, window, limit int) ([]*plantstore.Plant, error) {
	q := otherFilters(f)
	q.afterSQL(f.Sort, after)
	order, _ := sortSQL(f.Sort)
	inner := `SELECT id, ` + plantColumns + `, search FROM plants WHERE owner = $1` + q.where.String() +
		` ORDER BY ` + order + ` LIMIT ` + q.param(window)
	q.where.Reset()
	q.searchSQL(f.Words)
	sql := `SELECT id, ` + plantColumns + ` FROM (` + inner + `) w WHERE true` + q.where.String() +
		` ORDER BY ` + order + ` LIMIT ` + q.param(limit)
	return queryPage(ctx, qr, sql, db.plannedArgs(q.args), f.Owner, limit)
}

// windowEnd returns the position of the last plant of the window of
// searchWindow (the window-th after `after` that matches f's filters but
// its search), or nil when there are fewer.
func (db *DB) windowEnd(ctx context.Context, qr querier, f *plantstore.PlantFilter, after *plantstore.PlantKey, window int) (*plantstore.PlantKey, error) {
	q := otherFilters(f)
	q.afterSQL(f.Sort, after)
	order, _ := sortSQL(f.Sort)
	var key plantstore.PlantKey
	cols, dest := `id`, []any{&key.ID} // the order's: an index-only scan, unless f filters more
	switch f.Sort.Key() {
	case "name":
		cols, dest = `id, name`, append(dest, &key.Name)
	case "created_at":
		cols, dest = `id, created_at`, append(dest, &key.CreatedAt)
	}
	sql := `SELECT ` + cols + ` FROM plants WHERE owner = $1` + q.where.String() +
		` ORDER BY ` + order + ` OFFSET ` + q.param(window-1) + ` LIMIT 1`
	err := qr.QueryRow(ctx, sql, db.plannedArgs(q.args)...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return &key, err
}

// searchAll returns up to limit plants of f after `after`, found through
// the search index (or whatever the planner finds cheapest to find every
// match) and sorted (unindexedSQL). est are f's estimates (searchIndexSQL).
func (db *DB) searchAll(ctx context.Context, qr querier, f *plantstore.PlantFilter, after *plantstore.PlantKey, limit int, est *estimates) ([]*plantstore.Plant, error) {
	q := otherFilters(f)
	q.afterSQL(f.Sort, after)
	q.searchIndexSQL(f.Words, est)
	sql := `SELECT id, ` + plantColumns + ` FROM plants WHERE owner = $1` + q.where.String() +
		` ORDER BY ` + unindexedSQL(f.Sort) + ` LIMIT ` + q.param(limit)
	return queryPage(ctx, qr, sql, db.plannedArgs(q.args), f.Owner, limit)
}

// searchIndexSQL adds the condition of a search for words for a plan that
// uses the search index, given their estimates (estimate). The index
// answers a prefix ('w':*) by gathering the rows of every word it starts
// before it intersects the words: for a common word, hundreds of thousands
// of rows, which cost more than checking, on the rows that the rarest word
// finds, whether the others are there too (ts_match_vq, the function of
// @@, which no index serves; CockroachDB has no such function). So with
// several words, the rarest alone is looked up when the estimates say that
// gathering the rows of all of them costs more (a row gathered at about a
// thirtieth of a row checked).
func (q *plantQuery) searchIndexSQL(words []string, est *estimates) {
	words = nonEmpty(words)
	if len(words) < 2 || est == nil || len(est.words) != len(words) {
		q.searchSQL(words)
		return
	}
	rarest, gathered := 0, 0.0
	for i, n := range est.words {
		gathered += n
		if n < est.words[rarest] {
			rarest = i
		}
	}
	if est.words[rarest]*30 >= gathered+30*est.n {
		q.searchSQL(words)
		return
	}
	others := append(append([]string(nil), words[:rarest]...), words[rarest+1:]...)
	q.where.WriteString(` AND search @@ ` + q.param(searchQuery(words[rarest:rarest+1])) + `::tsquery` +
		` AND ts_match_vq(search, ` + q.param(searchQuery(others)) + `::tsquery)`)
}

// nonEmpty returns words without the empty ones.
func nonEmpty(words []string) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// estimates are the planner's estimates of the plants of a search after a
// position, at least 1 each.
type estimates struct {
	n     float64   // with the search
	t     float64   // without it (the other filters only)
	words []float64 // with each (non-empty) word alone, when there are several
}

// estimate returns the planner's estimates for f after `after`: EXPLAINs
// (planning only, no row read) in one round trip.
func (db *DB) estimate(ctx context.Context, f *plantstore.PlantFilter, after *plantstore.PlantKey) (*estimates, error) {
	est := &estimates{}
	b := &pgx.Batch{}
	queue := func(words []string, dest *float64) {
		q := otherFilters(f)
		q.afterSQL(f.Sort, after)
		q.searchSQL(words)
		b.Queue(`EXPLAIN (FORMAT JSON) SELECT 1 FROM plants WHERE owner = $1`+q.where.String(), q.args...).QueryRow(func(row pgx.Row) (err error) {
			*dest, err = scanPlanRows(row)
			*dest = max(*dest, 1)
			return err
		})
	}
	queue(f.Words, &est.n)
	queue(nil, &est.t)
	if words := nonEmpty(f.Words); len(words) > 1 {
		est.words = make([]float64, len(words))
		for i := range words {
			queue(words[i:i+1], &est.words[i])
		}
	}
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return est, nil
}

// scanPlanRows reads the planner's estimate of the rows of a query from
// its EXPLAIN (FORMAT JSON).
func scanPlanRows(row pgx.Row) (float64, error) {
	var plan []byte
	if err := row.Scan(&plan); err != nil {
		return 0, err
	}
	var out []struct {
		Plan struct {
			Rows *float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) != 1 || out[0].Plan.Rows == nil {
		return 0, fmt.Errorf("reading the plan %.200q: %v", plan, err)
	}
	return *out[0].Plan.Rows, nil
}
