package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestStartupLogSettings: the "plantstore serving" line shows the backend
// in use and the settings that apply to it, and none of another backend's
// (no "durability" on PostgreSQL, no pool settings on SQLite).
func TestStartupLogSettings(t *testing.T) {
	t.Parallel()
	sqliteOnly := []string{"durability", "sqlite_wal_autocheckpoint"}
	postgresOnly := []string{"db_max_conns", "db_statement_timeout"}
	for _, tt := range []struct {
		name   string
		db     func(t *testing.T) string
		args   []string
		want   map[string]any
		absent []string
	}{
		{"SQLite", tempDBPath, []string{"--durability", "relaxed", "--sqlite-wal-autocheckpoint", "500"},
			map[string]any{"backend": "sqlite", "durability": "relaxed", "sqlite_wal_autocheckpoint": float64(500), "db_timeout": "10s"},
			postgresOnly},
		{"Memory", func(*testing.T) string { return "memory:" }, nil,
			map[string]any{"backend": "memory", "db_timeout": "10s"},
			append(append([]string{}, sqliteOnly...), postgresOnly...)},
		{"PostgreSQL", func(t *testing.T) string { return pgtest.NewDatabase(t) }, []string{"--db-max-conns", "4", "--db-statement-timeout", "3s"},
			map[string]any{"backend": "postgres", "db_max_conns": float64(4), "db_statement_timeout": "3s", "db_timeout": "10s"},
			sqliteOnly},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			done := make(chan error, 1)
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr=", "--db", tt.db(t), "--no-bootstrap-admin"}, tt.args...)
			go func() { done <- run(ctx, args, func(string) string { return "" }, stdout, stderr) }()
			line := waitLogLine(t, stderr, done, "plantstore serving")
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.want {
				if diff := cmp.Diff(want, got[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s\nline: %s", k, diff, line)
				}
			}
			for _, k := range tt.absent {
				if v, ok := got[k]; ok {
					t.Errorf("the start-up line shows %s=%v, which does not apply to %s: %s", k, v, tt.name, line)
				}
			}
		})
	}
}
