package backup_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/backup"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// newDB returns the path of a migrated SQLite database with two plants.
func newDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plantstore.db")
	db := sqlite.NewDB(path)
	ctx := context.Background()
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{{Owner: "alice", ID: 1, Name: "Fern"}, {Owner: "alice", ID: 2, Name: "Ivy"}}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRoundTrip: an archive written by Take and WriteArchive restores to a
// database with the manifest's counts; its entries come in the format's
// order.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := newDB(t)
	snap, err := backup.Take(ctx, src, t.TempDir(), 0, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Remove()
	var archive bytes.Buffer
	n, err := snap.WriteArchive(ctx, &archive)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n, int64(archive.Len()); got != want {
		t.Errorf("WriteArchive = %d bytes, wrote %d", got, want)
	}
	m := snap.Manifest
	if m.Format != backup.Format || m.PlantstoreVersion != "v1.2.3" || m.Tables["plants"] != 2 || m.DB.SHA256 == "" || m.IntegrityCheck != "ok" {
		t.Fatalf("manifest = %+v", m)
	}

	dst := filepath.Join(t.TempDir(), "restored.db")
	got, report, err := backup.Restore(ctx, bytes.NewReader(archive.Bytes()), "archive", dst)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&m, got); diff != "" {
		t.Errorf("restored manifest (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(m.Tables, report.Tables); diff != "" {
		t.Errorf("restored tables (-manifest +file):\n%s", diff)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != sqlite.FileMode {
		t.Errorf("restored file: %v, %v; want mode %v", fi, err, sqlite.FileMode)
	}
}

// TestRestoreRefusesDamage: a flipped byte of the database entry fails the
// SHA-256 check, and nothing is written at the target.
func TestRestoreRefusesDamage(t *testing.T) {
	ctx := context.Background()
	snap, err := backup.Take(ctx, newDB(t), t.TempDir(), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Remove()
	var archive bytes.Buffer
	if _, err := snap.WriteArchive(ctx, &archive); err != nil {
		t.Fatal(err)
	}
	damaged := archive.Bytes()
	damaged[512+100] ^= 0x01 // a byte of the database entry, after its tar header
	dst := filepath.Join(t.TempDir(), "restored.db")
	_, _, err = backup.Restore(ctx, bytes.NewReader(damaged), "archive", dst)
	if err == nil || !strings.Contains(err.Error(), "the archive is damaged") {
		t.Fatalf("Restore of a damaged archive = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dst)); len(entries) != 0 {
		t.Errorf("left %d files beside the target", len(entries))
	}
}

// TestTakeMissing: a database that does not exist is sqlite.ErrNoDatabase.
func TestTakeMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := backup.Take(context.Background(), filepath.Join(dir, "nope.db"), dir, 0, "")
	if !errors.Is(err, sqlite.ErrNoDatabase) {
		t.Fatalf("Take of a missing database = %v, want ErrNoDatabase", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %d files", len(entries))
	}
}
