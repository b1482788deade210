//go:build !unix

package backup

import "io/fs"

// keepOwner does nothing where files have no Unix owner.
func keepOwner(string, fs.FileInfo) {}
