package sqlite_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/sqlite"
	"github.com/plantstore/plantstore/internal/testkit/filetest"
)

// TestOpenFileMode: the database file Open creates, and the -wal and -shm
// SQLite creates beside it, are 0600 whatever the umask and the directory's
// mode; an existing file that others may read is made the owner's alone,
// and OnFileMode says so.
func TestOpenFileMode(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o277} {
		filetest.WithUmask(t, mask)
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "sub", "plantstore.db")
		db := sqlite.NewDB(path)
		db.OnFileMode = func(path string, was fs.FileMode, err error) {
			t.Errorf("umask %04o: OnFileMode(%s, %04o, %v) for a new database", mask, path, was, err)
		}
		if err := db.Open(context.Background()); err != nil {
			t.Fatalf("umask %04o: %v", mask, err)
		}
		if _, err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
			filetest.CheckMode(t, p, 0o600)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}

	filetest.WithUmask(t, 0)
	path := filepath.Join(t.TempDir(), "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A database of an older plantstore (0644), with the WAL a crash left.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", nil, 0o640); err != nil {
		t.Fatal(err)
	}
	seen := map[string]fs.FileMode{}
	db = sqlite.NewDB(path)
	db.MustExist = true
	db.OnFileMode = func(p string, was fs.FileMode, err error) {
		if err != nil {
			t.Errorf("OnFileMode(%s): %v", p, err)
		}
		seen[filepath.Base(p)] = was
	}
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if want := map[string]fs.FileMode{"plantstore.db": 0o644, "plantstore.db-wal": 0o640}; !equalModes(seen, want) {
		t.Errorf("OnFileMode saw %v, want %v", seen, want)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		filetest.CheckMode(t, p, 0o600)
	}
}

func equalModes(a, b map[string]fs.FileMode) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestLockForOverwrite: a file that is not a database may be replaced (no
// lock file is made for it); a database is refused, at rest (ErrIsDatabase)
// or open (ErrInUse); while the lock is held no DB opens the file.
func TestLockForOverwrite(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plants.jsonl")
	if err := os.WriteFile(plain, []byte(`{"owner":"a","id":1,"name":"x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, filepath.Join(dir, "absent")} {
		release, err := sqlite.LockForOverwrite(p)
		if err != nil {
			t.Fatalf("LockForOverwrite(%s): %v", filepath.Base(p), err)
		}
		release()
		if _, err := os.Stat(p + ".lock"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("LockForOverwrite(%s) made a lock file: %v", filepath.Base(p), err)
		}
	}

	path := filepath.Join(dir, "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.LockForOverwrite(path); !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("LockForOverwrite of an open database: %v, want ErrInUse", err)
	}
	db.Close()
	if _, err := sqlite.LockForOverwrite(path); !errors.Is(err, sqlite.ErrIsDatabase) {
		t.Fatalf("LockForOverwrite of a closed database: %v, want ErrIsDatabase", err)
	}
	// Not a database by its header, but a WAL beside it.
	if err := os.WriteFile(plain+"-wal", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.LockForOverwrite(plain); !errors.Is(err, sqlite.ErrIsDatabase) {
		t.Fatalf("LockForOverwrite of a file with a -wal: %v, want ErrIsDatabase", err)
	}

	// A file with a lock file (a plantstore process opened that path once):
	// replaceable, and no DB opens it while the lock is held.
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	release, err := sqlite.LockForOverwrite(other)
	if err != nil {
		t.Fatalf("LockForOverwrite of a file with a lock file: %v", err)
	}
	opened := make(chan error, 1)
	go func() {
		o := sqlite.NewDB(other)
		err := o.Open(context.Background())
		if err == nil {
			o.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		release()
		t.Fatalf("Open returned (%v) while LockForOverwrite held the lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	<-opened // it opened (and failed: not a database) once released
}
