package input

import (
	"fmt"
	"os"
	"strings"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// KustomizeBuild builds dir the way kustomize-controller does
// (fluxcd/pkg/kustomize: a filesystem confined to root, no plugins, no
// remote bases), with every file kustomize reads held to this package's
// rule: a regular file of at most MaxFileSize bytes.
func KustomizeBuild(root, dir string) (resmap.ResMap, error) {
	fsys, err := securefs.MakeFsOnDiskSecure(root)
	if err != nil {
		return nil, err
	}
	return fluxkustomize.Build(boundedFS{fsys}, dir)
}

// BuildFix is the fix to append to a KustomizeBuild error: a file that
// kustomize refused because it is outside the repository (a symlink out,
// a ../ too many) is to be copied in.
func BuildFix(err error, repo string) string {
	if err != nil && strings.Contains(err.Error(), "fs-security-constraint") {
		return ": every file kustomize reads must be inside --repo " + repo + ": copy it into the repository instead of linking or referring outside"
	}
	return ""
}

// boundedFS is a kustomize filesystem whose ReadFile refuses devices, pipes
// and oversized files.
type boundedFS struct{ filesys.FileSystem }

func (b boundedFS) ReadFile(p string) ([]byte, error) {
	if !b.Exists(p) {
		return b.FileSystem.ReadFile(p) // the secure filesystem's own error
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if why := refuse(fi); why != "" {
		return nil, fmt.Errorf("%s %s: an input file must be a regular file of at most %d MiB", p, why, MaxFileSize>>20)
	}
	f, err := b.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readBounded(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return data, nil
}
