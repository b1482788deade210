package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore"
)

// plantQuery is the SQL of a plant filter: the conditions that follow
// "owner = $1", and the parameters of them all.
type plantQuery struct {
	args  []any
	where strings.Builder
}

// param adds v as a parameter and returns its placeholder.
func (q *plantQuery) param(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// filterQuery returns the conditions of f's filters (not of its page),
// its search included.
func filterQuery(f *plantstore.PlantFilter) *plantQuery {
	q := otherFilters(f)
	q.searchSQL(f.Words)
	return q
}

// otherFilters returns the conditions of f's filters but its search.
func otherFilters(f *plantstore.PlantFilter) *plantQuery {
	q := &plantQuery{args: make([]any, 1, 8)}
	q.args[0] = f.Owner
	switch len(f.Tags) {
	case 0:
	case 1:
		// One tag is an equality, which keeps the tag index's order by id.
		q.where.WriteString(` AND tag = ` + q.param(f.Tags[0]))
	default:
		q.where.WriteString(` AND tag = ANY(` + q.param(f.Tags) + `::text[])`)
	}
	if !f.CreatedAfter.IsZero() {
		q.where.WriteString(` AND created_at > ` + q.param(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		q.where.WriteString(` AND created_at < ` + q.param(f.CreatedBefore))
	}
	return q
}

// searchSQL adds the condition of a search for words, if any.
func (q *plantQuery) searchSQL(words []string) {
	if len(words) == 0 {
		return
	}
	if tsq := searchQuery(words); tsq != "" {
		q.where.WriteString(` AND search @@ ` + q.param(tsq) + `::tsquery`)
	} else {
		// Only empty words, which any word starts with: a plant that
		// has a word.
		q.where.WriteString(` AND search <> ''::tsvector`)
	}
}

// filtered reports whether f filters the owner's plants.
func filtered(f *plantstore.PlantFilter) bool {
	return len(f.Tags) > 0 || len(f.Words) > 0 || !f.CreatedAfter.IsZero() || !f.CreatedBefore.IsZero()
}

// sortSQL returns the ORDER BY of s, and the comparison operator of the
// positions after a key in that order. Names are compared by bytes
// (COLLATE "C"), as the index plants_owner_name_id orders them.
func sortSQL(s plantstore.PlantSort) (order, after string) {
	dir, after := "", ">"
	if s.Desc() {
		dir, after = " DESC", "<"
	}
	switch s.Key() {
	case "name":
		return `name COLLATE "C"` + dir + `, id` + dir, after
	case "created_at":
		return `created_at` + dir + `, id` + dir, after
	}
	return `id` + dir, after
}

// unindexedSQL returns an ORDER BY of the same order as sortSQL's that no
// index gives: the plan then finds every matching plant the cheapest way
// (for a search, the search index) and sorts them.
func unindexedSQL(s plantstore.PlantSort) string {
	dir := ""
	if s.Desc() {
		dir = " DESC"
	}
	switch s.Key() {
	case "name":
		return `(name || '') COLLATE "C"` + dir + `, id` + dir
	case "created_at":
		return `created_at + interval '0 s'` + dir + `, id` + dir
	}
	return `id + 0` + dir
}

// afterSQL adds the condition of the positions after key in the order of
// s: a row comparison, which an index scan of the order starts from.
func (q *plantQuery) afterSQL(s plantstore.PlantSort, key *plantstore.PlantKey) {
	if key == nil {
		return
	}
	_, op := sortSQL(s)
	switch s.Key() {
	case "name":
		q.where.WriteString(` AND (name COLLATE "C", id) ` + op + ` (` + q.param(key.Name) + `::text, ` + q.param(key.ID) + `::bigint)`)
	case "created_at":
		q.where.WriteString(` AND (created_at, id) ` + op + ` (` + q.param(key.CreatedAt) + `::timestamptz, ` + q.param(key.ID) + `::bigint)`)
	default:
		q.where.WriteString(` AND id ` + op + ` ` + q.param(key.ID))
	}
}

// plannedArgs returns args for a statement that is planned for its
// parameters on each call: an unnamed statement where the store prepares
// them (db.planned). A prepared statement is planned once for any
// parameters after a few calls (a generic plan), which suits a key, not a
// filter: a generic plan of a search is the same for a word on three
// plants and for one on half of them, and no plan serves both.
func (db *DB) plannedArgs(args []any) []any {
	return append([]any{db.planned}, args...)
}

// ListPlants returns up to f.Limit of the owner's plants matching f, in
// f.Sort's order after f.After. Without a filter it is one range scan of
// the order's index (the primary key for id) from f.After, whatever the
// page, as a prepared statement; with filters but no search, a statement
// planned for its parameters (plannedArgs); with a search, see
// searchPlants. scanPage turns the rows into plants.
func (db *DB) ListPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var (
		page []*plantstore.Plant
		err  error
	)
	switch {
	case searchQuery(f.Words) != "":
		page, err = db.searchPlants(ctx, &f)
	case filtered(&f):
		q := filterQuery(&f)
		q.afterSQL(f.Sort, f.After)
		order, _ := sortSQL(f.Sort)
		sql := `SELECT id, ` + plantColumns + ` FROM plants WHERE owner = $1` + q.where.String() +
			` ORDER BY ` + order + ` LIMIT ` + q.param(f.Limit)
		page, err = queryPage(ctx, db.pool, sql, db.plannedArgs(q.args), f.Owner, f.Limit)
	default:
		// The statement is one of a few, made once; its arguments are
		// boxed into one slice.
		args := make([]any, 1, 4)
		args[0] = f.Owner
		sql := pageSQL[f.Sort%6][0]
		if k := f.After; k != nil {
			sql = pageSQL[f.Sort%6][1]
			switch f.Sort.Key() {
			case "name":
				args = append(args, k.Name)
			case "created_at":
				args = append(args, k.CreatedAt)
			}
			args = append(args, k.ID)
		}
		page, err = queryPage(ctx, db.pool, sql, append(args, f.Limit), f.Owner, f.Limit)
	}
	if err != nil {
		return nil, wrap("list plants", err)
	}
	return page, nil
}

// pageSQL[s] are the statements of a page in the order s without filters:
// the first page, and a page after a position.
var pageSQL = func() (out [6][2]string) {
	for s := range plantstore.PlantSort(6) {
		for i, after := range []*plantstore.PlantKey{nil, {}} {
			q := &plantQuery{args: []any{""}}
			q.afterSQL(s, after)
			order, _ := sortSQL(s)
			out[s][i] = `SELECT id, ` + plantColumns + ` FROM plants WHERE owner = $1` + q.where.String() +
				` ORDER BY ` + order + ` LIMIT ` + q.param(0)
		}
	}
	return out
}()

// queryPage runs sql, a query of plants of owner (id and plantColumns),
// on q and scans at most limit of them (scanPage).
func queryPage(ctx context.Context, q querier, sql string, args []any, owner string, limit int) ([]*plantstore.Plant, error) {
	rows, _ := q.Query(ctx, sql, args...) // scanPage reports the error
	return scanPage(rows, owner, limit)
}

// CountPlants returns how many of the owner's plants match f (f.After and
// f.Limit aside). Exact, it counts them all. Estimated, it counts up to
// EstimateExactUpTo+1 of them (a scan that stops there), and beyond that
// answers the planner's estimate of the rows (EXPLAIN, from the table's
// statistics: no row read), at least EstimateExactUpTo+1. A search of
// several words looks up the rarest in the search index when cheaper
// (searchIndexSQL), from the same estimates.
func (db *DB) CountPlants(ctx context.Context, f plantstore.PlantFilter, estimate bool) (int64, error) {
	f.After = nil
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var est *estimates
	if estimate || len(nonEmpty(f.Words)) > 1 {
		var err error
		if est, err = db.estimate(ctx, &f, nil); err != nil {
			return 0, wrap("estimate plants", err)
		}
	}
	q := otherFilters(&f)
	q.searchIndexSQL(f.Words, est)
	from := ` FROM plants WHERE owner = $1` + q.where.String()
	var n int64
	if !estimate {
		err := db.pool.QueryRow(ctx, `SELECT count(*)`+from, db.plannedArgs(q.args)...).Scan(&n)
		return n, wrap("count plants", err)
	}
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1`+from+` LIMIT `+strconv.Itoa(plantstore.EstimateExactUpTo+1)+`) s`,
		db.plannedArgs(q.args)...).Scan(&n)
	if err != nil || n <= plantstore.EstimateExactUpTo {
		return n, wrap("count plants", err)
	}
	return max(int64(est.n), plantstore.EstimateExactUpTo+1), nil
}
