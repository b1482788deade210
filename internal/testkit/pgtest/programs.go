package pgtest

import (
	"path/filepath"
	"testing"
)

// Program returns the path of a client program of the PostgreSQL that
// clusters are started from (pg_dump, pg_restore, psql: beside its initdb,
// so of the same version; a symbolic link to initdb is followed). It skips or fails tb as NewDatabase does when
// PostgreSQL is not installed.
func Program(tb testing.TB, name string) string {
	tb.Helper()
	bin, err := findBinaries()
	if err != nil {
		fail(tb, err)
	}
	initdb := bin.initdb
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		initdb = real // a link in PATH to /usr/lib/postgresql/VERSION/bin/initdb
	}
	path := filepath.Join(filepath.Dir(initdb), name)
	if !isExecutable(path) {
		tb.Fatalf("pgtest: %s is not beside %s", name, bin.initdb)
	}
	return path
}
