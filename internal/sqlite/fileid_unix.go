//go:build unix

package sqlite

import (
	"io/fs"
	"syscall"
)

// fileID identifies a file: its device and inode.
type fileID struct{ dev, ino uint64 }

// statID returns the identity of the file at path (following symbolic
// links, as SQLite does when it opens it). It allocates only the path's C
// string, where os.Stat also allocates a FileInfo.
func statID(path string) (fileID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	// The conversions: Dev and Ino have other types on other platforms.
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// sameFile reports whether a and b are one file.
func sameFile(a, b fileID) bool { return a == b }
