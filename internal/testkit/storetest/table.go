package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/service"
)

// testTableStore checks the portable rows (TableStore) on the row store: each
// table takes and gives back rows of every column type, NULLs included,
// times to the microsecond; rows come in key order with text by bytes;
// a snapshot does not see later writes; ReplaceRows deletes and inserts
// atomically, ErrExists on a taken key; what the service writes reads back.
func testTableStore(t *testing.T, bs Backends) {
	if bs.NoSnapshot {
		b := bs.Open(t)
		snap, err := b.Snapshot(t.Context())
		if !errors.Is(err, errors.ErrUnsupported) {
			if snap != nil {
				snap.Close()
			}
			t.Fatalf("Snapshot = %v, want errors.ErrUnsupported (Backends.NoSnapshot)", err)
		}
		return
	}
	t.Run("RoundTrip", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		for _, tb := range portable.Tables {
			want := []portable.Row{sampleRow(tb, 0, false), sampleRow(tb, 1, true), sampleRow(tb, 2, false)}
			if err := b.ReplaceRows(ctx, tb, nil, want); err != nil {
				t.Fatalf("%s: ReplaceRows: %v", tb.Name, err)
			}
			if diff := cmp.Diff(want, readAll(t, b, tb)); diff != "" {
				t.Fatalf("%s: rows read back (-want +got):\n%s", tb.Name, diff)
			}
		}
	})

	t.Run("KeyOrder", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		tb := portable.TableNamed("plants")
		// Inserted out of order; read back by bytes: upper case before
		// lower case, ASCII before multi-byte UTF-8, ids numerically.
		owners := []string{"éclair", "zed", "Zed", "a b", "a", "ab", "~", "日本"}
		ids := []int64{math.MaxInt64, -1, 0, math.MinInt64, 10, 9}
		var rows []portable.Row
		for _, o := range owners {
			for _, id := range ids {
				rows = append(rows, portable.Row{o, id, "n", nil, fixedNow.UTC().Truncate(time.Microsecond), fixedNow.UTC().Truncate(time.Microsecond)})
			}
		}
		if err := b.ReplaceRows(ctx, tb, nil, rows); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range readAll(t, b, tb) {
			got = append(got, fmt.Sprintf("%s/%d", r[0], r[1]))
		}
		var want []string
		for _, o := range []string{"Zed", "a", "a b", "ab", "zed", "~", "éclair", "日本"} {
			for _, id := range []int64{math.MinInt64, -1, 0, 9, 10, math.MaxInt64} {
				want = append(want, fmt.Sprintf("%s/%d", o, id))
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("key order (-want +got):\n%s", diff)
		}
	})

	t.Run("Snapshot", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		tb := portable.TableNamed("tokens")
		first := sampleRow(tb, 0, false)
		if err := b.ReplaceRows(ctx, tb, nil, []portable.Row{first}); err != nil {
			t.Fatal(err)
		}
		snap, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		if err := b.ReplaceRows(ctx, tb, []portable.Row{first}, []portable.Row{sampleRow(tb, 1, false)}); err != nil {
			t.Fatal(err)
		}
		n, err := snap.Count(ctx, tb)
		if err != nil || n != 1 {
			t.Fatalf("snapshot's Count = %d, %v; want 1", n, err)
		}
		var got []portable.Row
		for r, err := range snap.Rows(ctx, tb) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if diff := cmp.Diff([]portable.Row{first}, got); diff != "" {
			t.Fatalf("the snapshot sees a later write (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]portable.Row{sampleRow(tb, 1, false)}, readAll(t, b, tb)); diff != "" {
			t.Fatalf("a new snapshot (-want +got):\n%s", diff)
		}
	})

	t.Run("ReplaceRows", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		tb := portable.TableNamed("events")
		r0, r1, r2 := sampleRow(tb, 0, false), sampleRow(tb, 1, false), sampleRow(tb, 2, false)
		if err := b.ReplaceRows(ctx, tb, nil, []portable.Row{r0, r1}); err != nil {
			t.Fatal(err)
		}
		// A taken key fails the whole call: the delete of r0 is undone.
		err := b.ReplaceRows(ctx, tb, []portable.Row{r0}, []portable.Row{r2, r1})
		if !errors.Is(err, plantstore.ErrExists) {
			t.Fatalf("ReplaceRows inserting a taken key: %v, want ErrExists", err)
		}
		if diff := cmp.Diff([]portable.Row{r0, r1}, readAll(t, b, tb)); diff != "" {
			t.Fatalf("after a failed ReplaceRows (-want +got):\n%s", diff)
		}
		// A row replaced by another with the same key (only the key of a
		// deleted row is read).
		changed := sampleRow(tb, 1, true)
		if err := b.ReplaceRows(ctx, tb, []portable.Row{r1[:tb.Key]}, []portable.Row{changed, r2}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]portable.Row{r0, changed, r2}, readAll(t, b, tb)); diff != "" {
			t.Fatalf("after ReplaceRows (-want +got):\n%s", diff)
		}
	})

	t.Run("ServiceRows", func(t *testing.T) {
		// What the service writes reads back as rows: a plant, its event,
		// a subscription and its delivery, a token.
		b, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		createSubscription(t, svc, "alice")
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 7, Name: "Fern", Tag: ptr("green")})
		if _, _, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice"}); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]int{"plants": 1, "events": 1, "event_sequences": 1, "webhook_subscriptions": 1, "webhook_deliveries": 1, "tokens": 1} {
			rows := readAll(t, b, portable.TableNamed(name))
			if len(rows) != want {
				t.Fatalf("%s: %d rows, want %d", name, len(rows), want)
			}
		}
		p := readAll(t, b, portable.TableNamed("plants"))[0]
		if p[0] != "alice" || p[1] != int64(7) || p[2] != "Fern" || p[3] != "green" {
			t.Fatalf("plant row %v", p)
		}
	})
}

// readAll reads tb's rows from a new snapshot of b.
func readAll(t *testing.T, b portable.Database, tb *portable.Table) []portable.Row {
	t.Helper()
	snap, err := b.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var rows []portable.Row
	for r, err := range snap.Rows(t.Context(), tb) {
		if err != nil {
			t.Fatalf("%s: %v", tb.Name, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// sampleRow returns a row of tb whose key grows with i, with a value in
// every column (nulls: nil in every nullable column), as it reads back
// (times in UTC, to the microsecond).
func sampleRow(tb *portable.Table, i int, nulls bool) portable.Row {
	row := make(portable.Row, len(tb.Columns))
	at := fixedNow.Add(time.Duration(i) * time.Hour).UTC().Truncate(time.Microsecond)
	for c, col := range tb.Columns {
		if nulls && col.Null {
			continue
		}
		switch col.Type {
		case portable.TypeText:
			v := fmt.Sprintf("%s-%d", col.Name, i)
			switch col.Name {
			case "state":
				v = []string{"pending", "failed", "succeeded"}[i%3]
			case "disabled_reason":
				v = "gone"
			case "scopes":
				v = "plants:read plants:write"
			}
			row[c] = v
		case portable.TypeInt:
			row[c] = int64(i*1000 + c)
		case portable.TypeBytes:
			row[c] = []byte(fmt.Sprintf(`{"%s":%d}`, col.Name, i))
		case portable.TypeTime:
			row[c] = at.Add(time.Duration(c) * time.Second)
		}
	}
	return row
}

// SchemaRows are a backend's catalog rows for CheckSchema: table, column,
// SQL type, NOT NULL, part of the primary key.
type SchemaRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CheckSchema fails t unless rows, a migrated backend's tables and columns
// (without its migration and derived tables), are portable.Tables': the
// same tables, the same columns with the same types (typeOf maps a
// column's SQL type to its portable one) and nullability, the same primary
// keys (column order aside). So a migration that adds a column or a table
// fails until the portable schema has it.
func CheckSchema(t *testing.T, rows SchemaRows, typeOf func(table, column, sqlType string) portable.ColumnType) {
	t.Helper()
	desc := func(table, name string, typ portable.ColumnType, notNull, key bool) string {
		s := fmt.Sprintf("%s.%s %s", table, name, typ)
		if notNull || key {
			s += " NOT NULL"
		}
		if key {
			s += " KEY"
		}
		return s
	}
	var want, got []string
	for _, tb := range portable.Tables {
		for i, c := range tb.Columns {
			want = append(want, desc(tb.Name, c.Name, c.Type, !c.Null, i < tb.Key))
		}
	}
	for rows.Next() {
		var table, name, sqlType string
		var notNull, key bool
		if err := rows.Scan(&table, &name, &sqlType, &notNull, &key); err != nil {
			t.Fatal(err)
		}
		got = append(got, desc(table, name, typeOf(table, name, sqlType), notNull, key))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("columns (-portable.Tables +database):\n%s", diff)
	}
}
