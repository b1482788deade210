package sqlite

import (
	"testing"

	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestTables_Schema: the portable schema (portable.Tables) is this
// backend's once migrated (storetest.CheckSchema), but for the search index
// (plant_search, plants.words and plants.doc, made by each write of a
// plant) and plants.updated_at, which the portable schema does not carry
// yet (a copied plant's is its created_at).
func TestTables_Schema(t *testing.T) {
	db := openInternal(t, nil)
	types := map[string]portable.ColumnType{"TEXT": portable.TypeText, "BLOB": portable.TypeBytes, "INTEGER": portable.TypeInt}
	rows, err := db.read.QueryContext(t.Context(), `SELECT m.name, c.name, c.type, c."notnull", c.pk > 0
FROM sqlite_schema m, pragma_table_info(m.name) c
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'goose_db_version'
AND m.name <> 'plant_search' AND m.name NOT LIKE 'plant_search_%'
AND NOT (m.name = 'plants' AND c.name IN ('words', 'doc', 'updated_at'))`)
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
