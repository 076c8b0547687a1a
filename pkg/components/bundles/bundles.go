// Package bundles embeds the Flux release bundles this module pins: the
// files of each release's manifests.tar.gz, extracted from the Flux
// Operator's module by `go generate` (the generator internal/genbundles, outside pkg/ so no public package reaches into internal/) and committed in
// flux/, so every clone, `go get` and `go install` of this module has them
// without a generate step. It is a package of its own so that a program
// bringing its own bundle does not carry them (about 15 MB; TestSizeBudget
// holds them under 20 MB). Why committed rather than a separately versioned
// module: docs/development.md, "Flux release bundles".
package bundles

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"golang.org/x/mod/semver"
)

//go:generate go run github.com/homelab-ops/bootstrap/internal/genbundles -out flux

// The directory also holds a README.md, so the pattern matches even in a
// tree whose releases were deleted.
//
//go:embed flux
var embedded embed.FS

// ErrNotGenerated is returned by Versions and Open when the build embeds no
// bundle. Since the bundles are committed, no build of this module's own
// tree, module zip or clone can lack them; it remains for a tree whose
// flux/v* directories were deleted (a fork trimming the module, say) and so
// that callers' errors.Is checks keep working.
var ErrNotGenerated = errors.New("built without the embedded Flux bundles: pkg/components/bundles/flux holds no release (they are committed: restore them with git, or regenerate with `go generate ./pkg/components/bundles`, make generate) and rebuild")

// Versions lists the Flux versions embedded, e.g. "v2.4.0", in ascending
// semver order (v2.2.3 before v2.10.0, which directory order would invert).
func Versions() ([]string, error) { return versions(embedded) }

func versions(fsys fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(fsys, "flux")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		// Only a directory named as a release is a bundle.
		if e.IsDir() && semver.IsValid(e.Name()) {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, ErrNotGenerated
	}
	semver.Sort(out)
	return out, nil
}

// Open returns the bundle of an embedded Flux version: <component>.yaml for
// each controller plus rbac.yaml and policies.yaml at its root.
func Open(version string) (fs.FS, error) {
	versions, err := Versions()
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if v == version {
			return fs.Sub(embedded, path.Join("flux", version))
		}
	}
	return nil, fmt.Errorf("Flux %s is not embedded (embedded: %v)", version, versions)
}
