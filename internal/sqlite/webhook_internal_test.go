package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMigrateWebhookLimits: migration 4 gives the subscriptions a 410 had
// disabled the reason gone, and the others none; down and up again keep
// the rows.
func TestMigrateWebhookLimits(t *testing.T) {
	ctx := context.Background()
	db := NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`INSERT INTO webhook_subscriptions (id, owner, url, secret, created_at, disabled_at) VALUES
		('whk_1', 'alice', 'http://127.0.0.1:9/', 's', 1, 2), ('whk_2', 'alice', 'http://127.0.0.1:9/', 's', 1, NULL)`); err != nil {
		t.Fatal(err)
	}
	if res, err := p.UpTo(ctx, 4); err != nil || len(res) != 1 {
		t.Fatalf("UpTo(4) = %d, %v; want 1 migration applied", len(res), err)
	}
	reasons := func() map[string]string {
		t.Helper()
		rows, err := db.write.Query(`SELECT id, disabled_reason FROM webhook_subscriptions`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]string{}
		for rows.Next() {
			var id string
			var reason sql.NullString
			if err := rows.Scan(&id, &reason); err != nil {
				t.Fatal(err)
			}
			got[id] = reason.String
		}
		return got
	}
	if got := reasons(); got["whk_1"] != "gone" || got["whk_2"] != "" {
		t.Fatalf("reasons after migration 4: %v, want whk_1 gone, whk_2 none", got)
	}
	if _, err := p.DownTo(ctx, 3); err != nil {
		t.Fatalf("down: %v", err)
	}
	var n int
	if err := db.write.QueryRow(`SELECT COUNT(*) FROM webhook_subscriptions`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("after down: %d subscriptions, %v; want 2", n, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := reasons(); got["whk_1"] != "gone" {
		t.Fatalf("reasons after up again: %v", got)
	}
}
