package sqlite

import (
	"testing"

	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestTables_Schema: the portable schema (portable.Tables) is this
// backend's once migrated (storetest.CheckSchema), but for the search index
// (plant_search, plants.words and plants.doc, made by each write of a
// plant). plants.updated_at is NULL while it is created_at (read back as
// coalesce), so it is NOT NULL as the portable schema sees it.
func TestTables_Schema(t *testing.T) {
	db := openInternal(t, nil)
	types := map[string]portable.ColumnType{"TEXT": portable.TypeText, "BLOB": portable.TypeBytes, "INTEGER": portable.TypeInt}
	rows, err := db.read.QueryContext(t.Context(), `SELECT m.name, c.name, c.type, c."notnull" OR (m.name = 'plants' AND c.name = 'updated_at'), c.pk > 0
FROM sqlite_schema m, pragma_table_info(m.name) c
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'goose_db_version'
AND m.name <> 'plant_search' AND m.name NOT LIKE 'plant_search_%'
AND NOT (m.name = 'plants' AND c.name IN ('words', 'doc'))`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	storetest.CheckSchema(t, rows, func(table, column, sqlType string) portable.ColumnType {
		// Times are integer nanoseconds: the portable type says which.
		if tb := portable.TableNamed(table); sqlType == "INTEGER" && tb != nil && tb.Index(column) >= 0 &&
			tb.Columns[tb.Index(column)].Type == portable.TypeTime {
			return portable.TypeTime
		}
		return types[sqlType]
	})
}
