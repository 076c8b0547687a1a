// Package bundles embeds the Flux release bundles this module pins (the
// files of each release's manifests.tar.gz, extracted from the Flux
// Operator's module at build time), for pkg/render. It is a package of its
// own so that a program bringing its own bundle does not carry them (about
// 16 MB). A build that skipped `go generate ./pkg/components/bundles` (make
// generate) embeds none: Versions then returns an error.
package bundles

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"golang.org/x/mod/semver"
)

//go:generate go run ./internal/genbundles -out flux

// The directory holds a committed README.md, so the pattern matches in a
// build that skipped generation too.
//
//go:embed flux
var embedded embed.FS

// ErrNotGenerated is returned by Versions and Open when the build embeds no
// bundle because generation was skipped.
var ErrNotGenerated = errors.New("built without the embedded Flux bundles: run `go generate ./pkg/components/bundles` (make generate) and rebuild")

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
