// Package backup is the backup archive of a SQLite database
// (docs/deployment.md, "Backups"), format plantstore-backup/1: a POSIX tar
// stream of two regular files, in this order:
//
//	plantstore.db   the SQLite snapshot (one file, rollback-journal mode)
//	manifest.json   Manifest, written after the database so that its
//	                SHA-256 is computed while the database streams out
//
// Take makes a verified snapshot of a database a server may be serving and
// Snapshot.WriteArchive writes its archive; Restore reads an archive, checks
// it against its manifest and puts the database in place. Write, Read and
// Check are the format's writer, reader and checks. The files go through
// package sqlite (its online backup API, its checks, its in-use lock).
package backup

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/sqlite"
)

// The archive's format and its two entries.
const (
	Format       = "plantstore-backup/1"
	DBName       = "plantstore.db"
	ManifestName = "manifest.json"
	// maxManifest bounds the manifest Read reads.
	maxManifest = 1 << 20
)

// Manifest is manifest.json.
type Manifest struct {
	Format            string           `json:"format"`
	CreatedAt         time.Time        `json:"created_at"`
	PlantstoreVersion string           `json:"plantstore_version"`
	SchemaVersion     int64            `json:"schema_version"`
	Tables            map[string]int64 `json:"tables"`
	DB                File             `json:"db"`
	IntegrityCheck    string           `json:"integrity_check"`
}

// File describes plantstore.db in the manifest.
type File struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Snapshot is a verified snapshot file of a database and the manifest of
// its archive (DB is filled by WriteArchive).
type Snapshot struct {
	Path     string
	Manifest Manifest
}

// Take writes a consistent snapshot of the SQLite database at db, which a
// server may be serving (writers are not blocked), to a new file in dir,
// waiting at most timeout while the database is locked, and checks it:
// PRAGMA integrity_check, a plantstore schema no newer than this one's.
// version is the plantstore version the manifest names. A database that
// does not exist is an error wrapping sqlite.ErrNoDatabase. The caller
// removes the snapshot (Remove).
func Take(ctx context.Context, db, dir string, timeout time.Duration, version string) (*Snapshot, error) {
	start := time.Now()
	f, err := os.CreateTemp(dir, ".plantstore-snapshot-*.db")
	if err != nil {
		return nil, fmt.Errorf("backup: snapshot file: %w", err)
	}
	f.Close()
	s := &Snapshot{Path: f.Name()}
	ok := false
	defer func() {
		if !ok {
			s.Remove()
		}
	}()
	if err := sqlite.BackupFile(ctx, db, s.Path, timeout); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	report, err := sqlite.InspectFile(ctx, s.Path)
	if err != nil {
		return nil, fmt.Errorf("backup: check the snapshot: %w", err)
	}
	switch {
	case report.Integrity != "ok":
		return nil, fmt.Errorf("backup: the snapshot of %s fails PRAGMA integrity_check, so the database itself is damaged: %s", db, report.Integrity)
	case report.Schema == 0:
		return nil, fmt.Errorf("backup: %s has no plantstore schema (run plantstore migrate first?)", db)
	case report.Schema > report.Known:
		return nil, fmt.Errorf("backup: the schema version of %s (%d) is newer than this plantstore knows (%d): use the plantstore that serves it", db, report.Schema, report.Known)
	}
	s.Manifest = Manifest{
		Format:            Format,
		CreatedAt:         start.UTC().Truncate(time.Millisecond),
		PlantstoreVersion: version,
		SchemaVersion:     report.Schema,
		Tables:            report.Tables,
		IntegrityCheck:    report.Integrity,
	}
	ok = true
	return s, nil
}

// WriteArchive writes the snapshot's archive to w, filling in
// s.Manifest.DB, and returns the bytes written.
func (s *Snapshot) WriteArchive(ctx context.Context, w io.Writer) (int64, error) {
	return Write(ctx, w, s.Path, &s.Manifest)
}

// Remove removes the snapshot file and the files SQLite may have left
// beside it.
func (s *Snapshot) Remove() { removeDBFiles(s.Path) }

// Write writes the archive of the snapshot file db to w, filling in m.DB,
// and returns the bytes written.
func Write(ctx context.Context, w io.Writer, db string, m *Manifest) (int64, error) {
	f, err := os.Open(db)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: w}
	tw := tar.NewWriter(cw)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: DBName, Mode: 0o600, Size: fi.Size(), ModTime: m.CreatedAt}
	if err := tw.WriteHeader(hdr); err != nil {
		return cw.n, err
	}
	h := sha256.New()
	n, err := io.Copy(tw, io.TeeReader(ctxReader{ctx, f}, h))
	if err != nil {
		return cw.n, err
	}
	if n != fi.Size() {
		return cw.n, fmt.Errorf("the snapshot changed size while being written (%d of %d bytes)", n, fi.Size())
	}
	m.DB = File{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return cw.n, err
	}
	js = append(js, '\n')
	hdr = &tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Mode: 0o600, Size: int64(len(js)), ModTime: m.CreatedAt}
	if err := tw.WriteHeader(hdr); err != nil {
		return cw.n, err
	}
	if _, err := tw.Write(js); err != nil {
		return cw.n, err
	}
	if err := tw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// Restore reads the archive r (named name in messages) into a new file
// beside db, checks it against its manifest (size, SHA-256, PRAGMA
// integrity_check, a schema no newer than this plantstore's, the row count
// of every table), then puts it in place of db, which may not exist (mode
// 0600, with the owner of the file replaced): never over a database a
// process has open, an error wrapping sqlite.ErrInUse. On any error db is
// untouched. It returns the manifest and what the restored file holds.
func Restore(ctx context.Context, r io.Reader, name, db string) (*Manifest, *sqlite.FileReport, error) {
	tmp, err := os.CreateTemp(filepath.Dir(db), filepath.Base(db)+".restore-*")
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	placed := false
	defer func() {
		tmp.Close()
		if !placed {
			removeDBFiles(tmp.Name())
		}
	}()
	m, err := Read(ctx, r, tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	report, err := sqlite.InspectFile(ctx, tmp.Name())
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %s: check the database: %w", name, err)
	}
	if err := Check(m, report); err != nil {
		return nil, nil, fmt.Errorf("restore: %s: %w; %s is untouched", name, err, db)
	}
	// The restored file is its owner's alone, like every database file
	// (sqlite.FileMode: it holds webhook signing secrets), whatever the
	// umask, and it gets the owner of the one it replaces, so the server's
	// user can open it (when allowed: restore run as root, or as that user).
	if err := os.Chmod(tmp.Name(), sqlite.FileMode); err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	if fi, err := os.Stat(db); err == nil {
		keepOwner(tmp.Name(), fi)
	}
	if err := sqlite.ReplaceFile(tmp.Name(), db); err != nil {
		if errors.Is(err, sqlite.ErrInUse) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	placed = true
	return m, report, nil
}

// Read reads the archive from r: the database into f (checking its size
// and SHA-256 against the manifest), then the manifest, which it returns.
// f is fsynced.
func Read(ctx context.Context, r io.Reader, f *os.File) (*Manifest, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("not a plantstore backup archive: %w", err)
	}
	if hdr.Name != DBName || hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("not a plantstore backup archive: its first entry is %q, not %s", hdr.Name, DBName)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, tr})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", DBName, err)
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	hdr, err = tr.Next()
	if err != nil {
		return nil, fmt.Errorf("no %s after %s (a truncated archive?): %w", ManifestName, DBName, err)
	}
	if hdr.Name != ManifestName || hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("unexpected entry %q after %s", hdr.Name, DBName)
	}
	if hdr.Size > maxManifest {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", ManifestName, hdr.Size, maxManifest)
	}
	js, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ManifestName, err)
	}
	var m Manifest
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestName, err)
	}
	if _, err := tr.Next(); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("unexpected entry after %s", ManifestName)
		}
		return nil, fmt.Errorf("after %s: %w", ManifestName, err)
	}
	switch {
	case m.Format != Format:
		return nil, fmt.Errorf("%s: format %q, this plantstore reads %q", ManifestName, m.Format, Format)
	case m.IntegrityCheck != "ok":
		return nil, fmt.Errorf("%s: integrity_check %q, not ok", ManifestName, m.IntegrityCheck)
	case n != m.DB.Size:
		return nil, fmt.Errorf("%s is %d bytes, the manifest says %d", DBName, n, m.DB.Size)
	case sum != m.DB.SHA256:
		return nil, fmt.Errorf("%s has SHA-256 %s, the manifest says %s: the archive is damaged", DBName, sum, m.DB.SHA256)
	}
	return &m, nil
}

// Check compares what sqlite.InspectFile found in a restored file with the
// manifest.
func Check(m *Manifest, r *sqlite.FileReport) error {
	switch {
	case r.Integrity != "ok":
		return fmt.Errorf("the database fails PRAGMA integrity_check: %s", r.Integrity)
	case r.Schema > r.Known:
		return fmt.Errorf("the backup's schema version %d is newer than this plantstore knows (%d): restore it with the plantstore that made it", r.Schema, r.Known)
	case r.Schema != m.SchemaVersion:
		return fmt.Errorf("the database's schema version is %d, the manifest says %d", r.Schema, m.SchemaVersion)
	}
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(m.Tables)) {
		if got, ok := r.Tables[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("table %s is missing", name))
		} else if got != m.Tables[name] {
			diffs = append(diffs, fmt.Sprintf("%s has %d rows, the manifest says %d", name, got, m.Tables[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Tables)) {
		if _, ok := m.Tables[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("table %s is not in the manifest", name))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the database does not match the manifest: %s", strings.Join(diffs, "; "))
	}
	return nil
}

// TableCounts renders a manifest's counts as tables.NAME=N pairs, sorted by
// name (the summary lines of backup and restore).
func TableCounts(t map[string]int64) string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(t)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "tables.%s=%d", name, t[name])
	}
	return b.String()
}

// removeDBFiles removes a temporary database file and the files SQLite
// may have left beside it.
func removeDBFiles(path string) {
	for _, p := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ctxReader stops a long read when ctx is done (SIGINT, SIGTERM).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
