package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/plantstore/plantstore/internal/textsearch"
)

// Migration 12 (Go: a plant's words come from textsearch) gives plants what
// search, sort and filters read (search.go):
//
//   - plants.updated_at (Unix nanoseconds; NULL reads as created_at),
//     plants.words (textsearch.Document of name and tag) and plants.doc (the
//     plant's docid in plant_search);
//   - plant_search, an FTS4 table of every plant's words, its owner and id
//     (stored, not indexed), by docid = plants.doc. It has neither prefix
//     indexes nor the docsize table (matchinfo=fts3): each costs every
//     write a share of its commit (measured: the prefix indexes "1,2,3"
//     about doubled the index's cost per create), and a search needs
//     neither (a short prefix is left out of the full-text query: see
//     search.go);
//   - triggers that keep plant_search in step with plants in the statement's
//     own transaction, whatever writes a plant: a row inserted with a doc
//     gets that docid, one without (a tool's or a copy's INSERT) the next
//     free one, written back to plants.doc;
//   - the indexes of keyset pages by name (holding every column) and by
//     creation time.
//
// Existing plants are filled in chunks of fillChunk, each committed alone,
// with progress in the log: the WAL of a 10-million-plant database stays
// bounded, and a migration interrupted half-way goes on where it stopped
// (the rows still without a doc) when run again. Their created_at is
// truncated to microseconds on the way, the precision plants now have (a
// cursor carries microseconds: a nanosecond left over would put a plant
// on two pages).
const searchVersion = 12

// fillChunk is how many plants one transaction of the fill writes (a
// variable for the tests).
var fillChunk = 50000

// searchSchema is what the fill needs before it starts: it is run again
// (each statement is skipped when done) when a fill was interrupted.
var searchSchema = []string{
	`CREATE VIRTUAL TABLE IF NOT EXISTS plant_search USING fts4(words, owner, id,
    notindexed=owner, notindexed=id, tokenize=simple, matchinfo=fts3)`,
}

// searchColumns are the columns migration 12 adds to plants.
var searchColumns = []struct{ name, def string }{
	{"updated_at", `INTEGER`}, // Unix nanoseconds; NULL: created_at
	{"words", `TEXT NOT NULL DEFAULT ''`},
	{"doc", `INTEGER`}, // docid in plant_search
}

// searchTriggers and searchIndexes come after the fill (an index is built
// once, sorted, rather than row by row).
var searchTriggers = []string{
	`CREATE TRIGGER IF NOT EXISTS plants_search_insert AFTER INSERT ON plants WHEN NEW.doc IS NOT NULL BEGIN
    INSERT INTO plant_search (docid, words, owner, id) VALUES (NEW.doc, NEW.words, NEW.owner, NEW.id);
END`,
	`CREATE TRIGGER IF NOT EXISTS plants_search_insert_nodoc AFTER INSERT ON plants WHEN NEW.doc IS NULL BEGIN
    INSERT INTO plant_search (words, owner, id) VALUES (NEW.words, NEW.owner, NEW.id);
    UPDATE plants SET doc = last_insert_rowid() WHERE owner = NEW.owner AND id = NEW.id;
END`,
	`CREATE TRIGGER IF NOT EXISTS plants_search_delete AFTER DELETE ON plants WHEN OLD.doc IS NOT NULL BEGIN
    DELETE FROM plant_search WHERE docid = OLD.doc;
END`,
	`CREATE TRIGGER IF NOT EXISTS plants_search_update AFTER UPDATE OF words ON plants
WHEN OLD.words IS NOT NEW.words AND NEW.doc IS NOT NULL BEGIN
    UPDATE plant_search SET words = NEW.words WHERE docid = NEW.doc;
END`,
}

// The index of the order by name holds every column a page reads: its
// order is not the primary key's, so that reading a row per entry walked
// would be a read anywhere in the table (search.go). That of the order by
// creation time holds only its key: creation time mostly follows ids, so
// the rows of consecutive entries are mostly next to each other; columns
// more would cost every create (measured: with the tag and the words, the
// time index took 4.3 of the 35 pages a commit of 31 creates writes,
// instead of 3.0).
var searchIndexes = []string{
	`CREATE INDEX IF NOT EXISTS plants_owner_name_id ON plants (owner, name, id, tag, created_at, updated_at, words)`,
	`CREATE INDEX IF NOT EXISTS plants_owner_created_id ON plants (owner, created_at, id)`,
}

// searchMigration is migration 12, logging its progress to log (nil:
// slog.Default()).
func searchMigration(log *slog.Logger) *goose.Migration {
	if log == nil {
		log = slog.Default()
	}
	return goose.NewGoMigration(searchVersion,
		&goose.GoFunc{RunDB: func(ctx context.Context, sqlDB *sql.DB) error { return migrateSearchUp(ctx, sqlDB, log) }},
		&goose.GoFunc{RunTx: migrateSearchDown})
}

func migrateSearchUp(ctx context.Context, sqlDB *sql.DB, log *slog.Logger) error {
	if err := inTx(ctx, sqlDB, func(tx *sql.Tx) error {
		have := map[string]bool{}
		rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info('plants')`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			have[name] = true
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, c := range searchColumns {
			if !have[c.name] {
				if _, err := tx.ExecContext(ctx, `ALTER TABLE plants ADD COLUMN `+c.name+` `+c.def); err != nil {
					return err
				}
			}
		}
		for _, q := range searchSchema {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("search schema: %w", err)
	}
	if err := fillSearch(ctx, sqlDB, log); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return inTx(ctx, sqlDB, func(tx *sql.Tx) error {
		for _, q := range append(append([]string{}, searchTriggers...), searchIndexes...) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("search schema: %w", err)
			}
		}
		return nil
	})
}

// fillSearch gives every plant without a doc its words, a doc and its
// plant_search row (and updated_at, and created_at in microseconds), in
// primary-key order, fillChunk plants per transaction.
func fillSearch(ctx context.Context, sqlDB *sql.DB, log *slog.Logger) error {
	var total int64
	if err := sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM plants WHERE doc IS NULL`).Scan(&total); err != nil {
		return err
	}
	if total == 0 {
		return nil
	}
	start := time.Now()
	log.Info(fmt.Sprintf("migration: search index: 0 of %d plants", total))
	type row struct {
		owner string
		id    int64
		words string
	}
	var (
		done     int64
		last     *row
		chunk    = make([]row, 0, fillChunk)
		keyQuery = `SELECT owner, id, name, tag FROM plants WHERE (owner, id) > (?, ?) AND doc IS NULL ORDER BY owner, id LIMIT ?`
	)
	for {
		chunk = chunk[:0]
		var rows *sql.Rows
		var err error
		if last == nil {
			rows, err = sqlDB.QueryContext(ctx, `SELECT owner, id, name, tag FROM plants WHERE doc IS NULL ORDER BY owner, id LIMIT ?`, fillChunk)
		} else {
			rows, err = sqlDB.QueryContext(ctx, keyQuery, last.owner, last.id, fillChunk)
		}
		if err != nil {
			return err
		}
		for rows.Next() {
			var r row
			var name string
			var tag sql.NullString
			if err := rows.Scan(&r.owner, &r.id, &name, &tag); err != nil {
				rows.Close()
				return err
			}
			var tp *string
			if tag.Valid {
				tp = &tag.String
			}
			r.words = textsearch.Document(name, tp)
			chunk = append(chunk, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(chunk) == 0 {
			break
		}
		err = inTx(ctx, sqlDB, func(tx *sql.Tx) error {
			var doc int64
			if err := tx.QueryRowContext(ctx, qMaxDoc).Scan(&doc); err != nil {
				return err
			}
			upd, err := tx.PrepareContext(ctx, `UPDATE plants SET words = ?, doc = ?,
    created_at = created_at - ((created_at % 1000) + 1000) % 1000,
    updated_at = coalesce(updated_at, created_at - ((created_at % 1000) + 1000) % 1000)
WHERE owner = ? AND id = ?`)
			if err != nil {
				return err
			}
			defer upd.Close()
			ins, err := tx.PrepareContext(ctx, `INSERT INTO plant_search (docid, words, owner, id) VALUES (?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer ins.Close()
			for i := range chunk {
				r := &chunk[i]
				doc++
				if _, err := upd.ExecContext(ctx, r.words, doc, r.owner, r.id); err != nil {
					return err
				}
				if _, err := ins.ExecContext(ctx, doc, r.words, r.owner, r.id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done += int64(len(chunk))
		l := chunk[len(chunk)-1]
		last = &l
		log.Info(fmt.Sprintf("migration: search index: %d of %d plants", done, total))
	}
	// One segment for the whole index: queries read one doclist per term
	// instead of merging those of every batch.
	if _, err := sqlDB.ExecContext(ctx, `INSERT INTO plant_search (plant_search) VALUES ('optimize')`); err != nil {
		return err
	}
	log.Info(fmt.Sprintf("migration: search index: %d plants indexed in %s", done, time.Since(start).Round(time.Millisecond)))
	return nil
}

func migrateSearchDown(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		`DROP TRIGGER IF EXISTS plants_search_insert`,
		`DROP TRIGGER IF EXISTS plants_search_insert_nodoc`,
		`DROP TRIGGER IF EXISTS plants_search_delete`,
		`DROP TRIGGER IF EXISTS plants_search_update`,
		`DROP INDEX IF EXISTS plants_owner_name_id`,
		`DROP INDEX IF EXISTS plants_owner_created_id`,
		`DROP TABLE IF EXISTS plant_search`,
		`ALTER TABLE plants DROP COLUMN doc`,
		`ALTER TABLE plants DROP COLUMN words`,
		`ALTER TABLE plants DROP COLUMN updated_at`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// inTx runs f in a transaction of db.
func inTx(ctx context.Context, db *sql.DB, f func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
