// Package dbfile tells the files of a SQLite database from other files by
// their content and their names: a database (its header), and the files
// SQLite and plantstore keep beside one, whose names are the database's
// plus a suffix. A command that writes a file it was given refuses both:
// writing a database's -wal, -shm or -journal loses or damages its
// commits, and replacing its .lock file lets a restore replace it while a
// server serves it.
package dbfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// header starts every SQLite database file.
const header = "SQLite format 3\x00"

// IsDatabase reports whether the file at path starts with the SQLite
// header; a missing file is not a database.
func IsDatabase(path string) (bool, error) {
	b, err := readStart(path, len(header))
	return string(b) == header, err
}

// readStart returns the first n bytes of the file at path (fewer when it
// is shorter; none when it is missing).
func readStart(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:m], nil
}

// A CompanionError says that a path names a file kept beside a SQLite
// database, or a file in such a directory.
type CompanionError struct {
	// Path is the path as given.
	Path string
	// Companion is the file beside the database that Path is, resolves
	// to, or is inside of.
	Companion string
	// DB is the database's path.
	DB string
	// Role says what Companion is, e.g. "write-ahead log (-wal)".
	Role string
	// Missing is set when DB does not exist: Companion is a write-ahead
	// log or journal left by a database deleted or moved while open.
	Missing bool
}

func (e *CompanionError) Error() string {
	var s string
	switch abs, _ := filepath.Abs(e.Path); {
	case abs == e.Companion:
		s = fmt.Sprintf("%s is the %s of the SQLite database %s", e.Path, e.Role, e.DB)
	case strings.HasPrefix(abs, e.Companion+string(filepath.Separator)):
		s = fmt.Sprintf("%s is inside %s, the %s of the SQLite database %s", e.Path, e.Companion, e.Role, e.DB)
	default:
		s = fmt.Sprintf("%s resolves to %s, the %s of the SQLite database %s", e.Path, e.Companion, e.Role, e.DB)
	}
	if e.Missing {
		s += " (which does not exist: it was deleted or moved while open, and this file may hold its last commits)"
	}
	return s
}

// suffixes are the names of the files SQLite and plantstore keep beside a
// database X: X-wal, X-shm and X-journal (SQLite), X.lock (plantstore's
// open and in-use lock).
var suffixes = []struct{ suffix, role string }{
	{"-wal", "write-ahead log (-wal)"},
	{"-shm", "shared-memory index (-shm)"},
	{"-journal", "rollback journal (-journal)"},
	{".lock", "lock file (.lock)"},
}

// superJournal is the name of SQLite's super-journal, X-mj followed by
// nine hexadecimal digits, the seventh a 9.
var superJournal = regexp.MustCompile(`-mj[0-9A-F]{6}9[0-9A-F]{2}$`)

// companionName returns the database whose companion the file at name
// would be, by its name alone, and what that file is.
func companionName(name string) (db, role string, ok bool) {
	base := filepath.Base(name)
	for _, s := range suffixes {
		if len(base) > len(s.suffix) && strings.HasSuffix(base, s.suffix) {
			return strings.TrimSuffix(name, s.suffix), s.role, true
		}
	}
	if loc := superJournal.FindStringIndex(base); loc != nil && loc[0] > 0 {
		return name[:len(name)-len(base)+loc[0]], "super-journal (-mj…)", true
	}
	// Litestream keeps its shadow WAL and state in .X-litestream beside X.
	if inner, found := strings.CutPrefix(base, "."); found {
		if db, found := strings.CutSuffix(inner, "-litestream"); found && db != "" {
			return filepath.Join(filepath.Dir(name), db), "Litestream directory (.X-litestream)", true
		}
	}
	return "", "", false
}

// walMagic and journalMagic start a write-ahead log (either byte order of
// its checksums) and a hot rollback journal.
var (
	walMagic     = [][]byte{{0x37, 0x7f, 0x06, 0x82}, {0x37, 0x7f, 0x06, 0x83}}
	journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}
)

// CheckNotCompanion returns a *CompanionError when path names a file that
// SQLite or plantstore keeps beside a SQLite database, or a file in
// Litestream's directory of one: the database's -wal, -shm, -journal or
// super-journal, its .lock, its .X-litestream directory. It looks at path as
// written (absolute, "..") and as it resolves (symbolic links, of path
// itself, or of its directory when it does not exist), and finds the
// database by name: a file with the SQLite header; or an empty file (a
// database before its first write) beside any of its -wal, -shm, -journal or
// .lock; or, missing, when path itself is a write-ahead log or hot journal
// (its header), whose commits would be lost. A path that exists or not is
// checked alike: creating such a file is as harmful as replacing it.
func CheckNotCompanion(path string) error {
	for _, name := range names(path) {
		for n := name; ; {
			if err := checkName(path, n); err != nil {
				return err
			}
			parent := filepath.Dir(n)
			if parent == n {
				break
			}
			n = parent
		}
	}
	return nil
}

// checkName checks one name path resolves to, or one of its directories.
func checkName(path, name string) error {
	db, role, ok := companionName(name)
	if !ok {
		return nil
	}
	isDB, err := database(db)
	if err != nil {
		return fmt.Errorf("check %s: %w", db, err)
	}
	if isDB {
		return &CompanionError{Path: path, Companion: name, DB: db, Role: role}
	}
	if _, err := os.Lstat(db); !errors.Is(err, fs.ErrNotExist) {
		return nil // another kind of file: its name is a coincidence
	}
	start, err := readStart(name, len(journalMagic))
	if err != nil {
		return nil // unreadable: the write says why
	}
	logged := len(start) == len(journalMagic) && string(start) == string(journalMagic)
	for _, m := range walMagic {
		logged = logged || (len(start) >= len(m) && string(start[:len(m)]) == string(m))
	}
	if logged {
		return &CompanionError{Path: path, Companion: name, DB: db, Role: role, Missing: true}
	}
	return nil
}

// database reports whether the file at path is a SQLite database: its
// header, or empty with a file SQLite or plantstore keeps beside one.
func database(path string) (bool, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.Mode().IsRegular():
		return false, nil
	case fi.Size() == 0:
		for _, s := range suffixes {
			if _, err := os.Lstat(path + s.suffix); err == nil {
				return true, nil
			}
		}
		return false, nil
	}
	return IsDatabase(path)
}

// names returns the absolute names path has: as written, with ".."
// applied to the names, and as the system resolves it, following symbolic
// links (path's own, even a dangling one; or its directory's when path
// does not exist).
func names(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	out := []string{abs}
	if r, err := resolve(path, 40); err == nil && r != abs {
		out = append(out, r)
	}
	return out
}

// resolve returns path with its symbolic links resolved, hops links at
// most past the ones filepath.EvalSymlinks follows.
func resolve(path string, hops int) (string, error) {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return filepath.Abs(r)
	}
	dir, base := split(path)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 && hops > 0 {
		// A dangling link: where it points, which a write would create.
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = dir + string(filepath.Separator) + target
		}
		return resolve(target, hops-1)
	}
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return filepath.Abs(filepath.Join(r, base))
}

// split splits path at its last separator without cleaning it (cleaning
// applies ".." to the names, which is wrong after a symbolic link).
func split(path string) (dir, base string) {
	path = strings.TrimRight(path, string(filepath.Separator))
	i := strings.LastIndexByte(path, filepath.Separator)
	switch {
	case path == "":
		return string(filepath.Separator), ""
	case i < 0:
		return ".", path
	case i == 0:
		return string(filepath.Separator), path[1:]
	}
	return path[:i], path[i+1:]
}
