package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// Migration 11, in Go: plants gain updated_at (the last change of name or
// tag; created_at for every existing plant) and search, the tsvector of
// their words (search.go), with the indexes of plant search and sorts. A
// SQL migration cannot fill search: the words are textsearch's, made in
// Go, and no SQL expression folds and splits text the same way.
//
// It runs outside a transaction, in steps that a run cut short (a crash, a
// timeout) leaves in a state the next run resumes from: the columns are
// added nullable (instant: no rewrite); the rows are filled in chunks of
// fillChunk by primary key, each chunk its own transaction, with progress
// in the log; the indexes are built (CREATE INDEX: writes wait during each
// build, reads go on); then, under a lock that holds off writers, the rows
// that writers of the old schema added or changed meanwhile are filled and
// both columns become NOT NULL; and the table is analyzed, so that the
// planner knows the words at once. Only then does goose record version 11.
//
// Old binaries still running after it fail to create plants (their INSERT
// has no updated_at and no search): roll every replica onto the new binary.
// A plant that an old binary renames while the fill runs, after its chunk,
// keeps the words of its old name until its next change.
//
// At 10M plants (one owner, 2 vCPUs): the fill took 2 min 37 s, the three
// indexes 53 s, the rest 2 s; the table grows by the rows' old versions
// (1.5 GB of rows, from 0.7), which VACUUM makes reusable (VACUUM FULL or
// pg_repack gives the space back).
//
// CockroachDB (not tested) has no LOCK TABLE, and builds indexes online.
const searchMigrationVersion = 11

// fillChunk is how many plants one transaction of the fill updates.
const fillChunk = 10000

// progressEvery is how often the fill logs its progress.
const progressEvery = 5 * time.Second

const (
	qSearchColumns = `ALTER TABLE plants ADD COLUMN IF NOT EXISTS updated_at TIMESTAMPTZ, ADD COLUMN IF NOT EXISTS search TSVECTOR`
	// The keyset orders of a plant list (ListPlants): names compared by
	// bytes, as SQLite compares them, whatever the database's collation;
	// and the GIN index of search (prefix queries, 'w':*).
	qSearchIndexes = `CREATE INDEX IF NOT EXISTS plants_owner_name_id ON plants (owner, name COLLATE "C", id);
CREATE INDEX IF NOT EXISTS plants_owner_created_id ON plants (owner, created_at, id);
CREATE INDEX IF NOT EXISTS plants_search ON plants USING gin (search)`
	qSearchNotNull = `ALTER TABLE plants ALTER COLUMN updated_at SET NOT NULL, ALTER COLUMN search SET NOT NULL`
	qSearchDown    = `DROP INDEX IF EXISTS plants_search;
DROP INDEX IF EXISTS plants_owner_created_id;
DROP INDEX IF EXISTS plants_owner_name_id;
ALTER TABLE plants DROP COLUMN IF EXISTS search, DROP COLUMN IF EXISTS updated_at`

	// qFillFirst and qFillNext read the next chunk of plants without
	// search, by primary key.
	qFillFirst = `SELECT owner, id, name, tag FROM plants WHERE search IS NULL ORDER BY owner, id LIMIT $1`
	qFillNext  = `SELECT owner, id, name, tag FROM plants WHERE (owner, id) > ($2, $3) AND search IS NULL ORDER BY owner, id LIMIT $1`
	// qFillRest reads every plant still without search (under the lock).
	qFillRest = `SELECT owner, id, name, tag FROM plants WHERE search IS NULL`
	// qFill fills the plants of a chunk, each while it has the name and tag
	// it was read with: one that a writer changed since is left for the
	// pass under the lock.
	qFill = `UPDATE plants p SET search = ` + searchOf + `u.words` + searchEnd + `, updated_at = COALESCE(p.updated_at, p.created_at)
FROM unnest($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::TEXT[]) AS u (owner, id, name, tag, words)
WHERE p.owner = u.owner AND p.id = u.id AND p.name = u.name AND p.tag IS NOT DISTINCT FROM u.tag`
)

// searchMigration is migration 11 of db.
func (db *DB) searchMigration() *goose.Migration {
	return goose.NewGoMigration(searchMigrationVersion,
		&goose.GoFunc{RunDB: func(ctx context.Context, sqlDB *sql.DB) error {
			// One connection of goose's for the whole step, as a SQL
			// migration has.
			conn, err := sqlDB.Conn(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			return conn.Raw(func(driverConn any) error {
				return db.migrateSearch(ctx, driverConn.(*stdlib.Conn).Conn())
			})
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, qSearchDown)
			return err
		}})
}

// logger returns db.Logger, or slog's default.
func (db *DB) logger() *slog.Logger {
	if db.Logger != nil {
		return db.Logger
	}
	return slog.Default()
}

// migrateSearch is the up step of migration 11 (see searchMigration), on
// conn.
func (db *DB) migrateSearch(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, qSearchColumns); err != nil {
		return fmt.Errorf("add columns: %w", err)
	}
	var total int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM plants WHERE search IS NULL`).Scan(&total); err != nil {
		return fmt.Errorf("count plants: %w", err)
	}
	log, start := db.logger(), time.Now()
	if total > 0 {
		log.Info(fmt.Sprintf("migration: search index: filling %d plants", total))
	}
	var (
		done       int64
		lastOwner  string
		lastID     int64
		lastLogged = start
	)
	for {
		var rows pgx.Rows
		if done == 0 {
			rows, _ = conn.Query(ctx, qFillFirst, db.planned, fillChunk)
		} else {
			rows, _ = conn.Query(ctx, qFillNext, db.planned, fillChunk, lastOwner, lastID)
		}
		chunk, err := readFillChunk(rows)
		if err != nil {
			return fmt.Errorf("read plants: %w", err)
		}
		if chunk.len() == 0 {
			break
		}
		if _, err := conn.Exec(ctx, qFill, db.plannedArgs(chunk.args())...); err != nil {
			return fmt.Errorf("fill plants: %w", err)
		}
		done += int64(chunk.len())
		lastOwner, lastID = chunk.owners[chunk.len()-1], chunk.ids[chunk.len()-1]
		if time.Since(lastLogged) >= progressEvery {
			log.Info(fmt.Sprintf("migration: search index: %d of %d plants", done, total))
			lastLogged = time.Now()
		}
	}
	if total > 0 {
		log.Info(fmt.Sprintf("migration: search index: %d of %d plants filled in %s; building the indexes", done, total, time.Since(start).Round(time.Second)))
	}
	built := time.Now()
	if _, err := conn.Exec(ctx, qSearchIndexes); err != nil {
		return fmt.Errorf("create indexes: %w", err)
	}
	if total > 0 {
		log.Info(fmt.Sprintf("migration: search index: indexes built in %s", time.Since(built).Round(time.Second)))
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// SHARE: writers wait, readers do not, until the commit.
		if _, err := tx.Exec(ctx, `LOCK TABLE plants IN SHARE MODE`); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, qFillRest)
		rest, err := readFillChunk(rows)
		if err != nil {
			return err
		}
		if rest.len() > 0 {
			if _, err := tx.Exec(ctx, qFill, db.plannedArgs(rest.args())...); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, qSearchNotNull)
		return err
	})
	if err != nil {
		return fmt.Errorf("complete the fill: %w", err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE plants`); err != nil {
		return fmt.Errorf("analyze plants: %w", err)
	}
	if total > 0 {
		log.Info(fmt.Sprintf("migration: search index: done in %s", time.Since(start).Round(time.Second)))
	}
	return nil
}

// fillRows are plants read for the fill, as the arrays of qFill.
type fillRows struct {
	owners, names, words []string
	ids                  []int64
	tags                 []*string
}

func (c *fillRows) len() int { return len(c.ids) }

func (c *fillRows) args() []any { return []any{c.owners, c.ids, c.names, c.tags, c.words} }

// readFillChunk reads rows of (owner, id, name, tag) and makes each
// plant's words (searchText).
func readFillChunk(rows pgx.Rows) (*fillRows, error) {
	defer rows.Close()
	c := &fillRows{}
	var (
		owner, name string
		id          int64
		tag         *string
	)
	for rows.Next() {
		if err := rows.Scan(&owner, &id, &name, &tag); err != nil {
			return nil, err
		}
		c.owners, c.ids, c.names, c.tags = append(c.owners, owner), append(c.ids, id), append(c.names, name), append(c.tags, tag)
		c.words = append(c.words, searchText(name, tag))
		tag = nil
	}
	return c, rows.Err()
}
