//go:build !unix

package fluxrepo

import "io/fs"

func nlink(fs.FileInfo) uint64 { return 1 }
