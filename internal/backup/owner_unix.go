//go:build unix

package backup

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives the file at path the owner of fi, where allowed.
func keepOwner(path string, fi fs.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		os.Chown(path, int(st.Uid), int(st.Gid))
	}
}
