package postgres

import (
	"testing"

	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestTables_Schema: the portable schema (portable.Tables) is this
// backend's once migrated (storetest.CheckSchema), but for webhook_owners
// and token_owners, the rows a create locks (made by the create itself),
// and plants.search, the search index of name and tag (made by each write
// of a plant).
func TestTables_Schema(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	types := map[string]portable.ColumnType{
		"text": portable.TypeText, "bigint": portable.TypeInt, "integer": portable.TypeInt,
		"bytea": portable.TypeBytes, "timestamp with time zone": portable.TypeTime,
	}
	rows, _ := db.pool.Query(t.Context(), `SELECT c.table_name::text, c.column_name::text, c.data_type::text, c.is_nullable = 'NO',
  EXISTS (SELECT 1 FROM information_schema.key_column_usage k JOIN information_schema.table_constraints tc
    ON tc.constraint_name = k.constraint_name AND tc.table_name = k.table_name
    WHERE tc.constraint_type = 'PRIMARY KEY' AND k.table_name = c.table_name AND k.column_name = c.column_name)
FROM information_schema.columns c JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
WHERE c.table_schema = current_schema() AND c.table_name NOT IN ('goose_db_version', 'goose_lock', 'webhook_owners', 'token_owners')
  AND (c.table_name, c.column_name) <> ('plants', 'search')`)
	defer rows.Close()
	storetest.CheckSchema(t, rows, func(_, _, sqlType string) portable.ColumnType { return types[sqlType] })
}
