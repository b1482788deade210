package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/sqlite"
)

// dbFlags selects the database; every command takes them.
type dbFlags struct {
	DB string `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"Database: a SQLite file path (created on first use). postgres:// URLs are not supported yet."`

	// durability is set by serve's --durability; other commands use full.
	durability sqlite.Durability
}

// connect opens the database without looking at its schema.
func (f *dbFlags) connect() (*sqlite.DB, error) {
	if strings.HasPrefix(f.DB, "postgres://") || strings.HasPrefix(f.DB, "postgresql://") {
		return nil, fmt.Errorf("--db: PostgreSQL is not supported by this version yet; give a SQLite file path")
	}
	if f.DB == "" {
		return nil, fmt.Errorf("--db: a database path is required")
	}
	db := sqlite.NewDB(f.DB)
	if f.durability != "" {
		db.Durability = f.durability
	}
	if err := db.Open(); err != nil {
		return nil, err
	}
	return db, nil
}

// open opens the database. With migrate it applies pending migrations;
// without, it refuses a schema that is not exactly the one this binary
// knows. Either way it refuses a schema newer than this binary knows.
func (f *dbFlags) open(ctx context.Context, migrate bool) (*sqlite.DB, error) {
	db, err := f.connect()
	if err != nil {
		return nil, err
	}
	if err := f.prepare(ctx, db, migrate); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (f *dbFlags) prepare(ctx context.Context, db *sqlite.DB, migrate bool) error {
	if migrate {
		_, err := db.Migrate(ctx)
		return err
	}
	current, known, err := db.SchemaStatus(ctx)
	switch {
	case err != nil:
		return err
	case current > known:
		return &plantstore.SchemaTooNewError{Current: current, Known: known}
	case current < known:
		return fmt.Errorf("database schema version %d is older than this plantstore needs (%d): run `plantstore migrate --db %s`, or serve without --no-migrate", current, known, f.DB)
	}
	return nil
}

// migrateCmd is `plantstore migrate`.
type migrateCmd struct {
	dbFlags
}

// Run applies pending migrations.
func (c *migrateCmd) Run(ctx context.Context, e *env) error {
	db, err := c.connect()
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	current, _, err := db.SchemaStatus(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "plantstore: applied %d migration(s); schema version is %d\n", n, current)
	return nil
}
