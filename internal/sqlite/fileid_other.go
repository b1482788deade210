//go:build !unix

package sqlite

import "os"

// fileID identifies a file (os.SameFile compares them).
type fileID struct{ fi os.FileInfo }

// statID returns the identity of the file at path.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	return fileID{fi}, err
}

// sameFile reports whether a and b are one file.
func sameFile(a, b fileID) bool { return os.SameFile(a.fi, b.fi) }
