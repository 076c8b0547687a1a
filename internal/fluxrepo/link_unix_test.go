//go:build unix

package fluxrepo

import (
	"io/fs"
	"syscall"
)

// nlink is a file's link count (1 where the system does not say).
func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
