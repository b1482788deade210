//go:build unix

// Package filetest holds the file-mode helpers of the tests that check what
// mode plantstore gives the files it writes (sqlite's Open, and the
// commands' databases, archives and exports).
package filetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WithUmask sets the process's umask for the rest of the test, which the
// processes it starts inherit. Tests that call it must not run in
// parallel.
func WithUmask(t testing.TB, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// CheckMode fails the test unless the file at path has permissions want.
func CheckMode(t testing.TB, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", filepath.Base(path), got, want)
	}
}
