package customize

import (
	"errors"
	"os"

	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Preflight checks, before anything is read or requested, what the render
// would refuse of o without reading a file: the log level and, for the
// embedded bundle (no --manifests), the version and the components. A
// refusal is pkg/components' typed error, for the caller to word.
func Preflight(o Options) error {
	if o.Manifests != "" {
		return components.CheckLogLevel(o.Components.LogLevel)
	}
	return components.Preflight(o.Components)
}

// OpenManifests is the bundle --manifests p names: a directory, or a
// manifests.tar.gz unpacked into a temporary directory that cleanup
// removes. Every file is read under the input rule (safeio: a regular file
// inside the directory, bounded in size); a directory or tarball that is
// not a bundle is pkg/components' *BundleError, for the caller to word.
func OpenManifests(p string) (b *components.Bundle, cleanup func(), err error) {
	noop := func() {}
	label := "--manifests " + p
	fi, err := os.Stat(p)
	if err != nil {
		return nil, noop, verify.InputErrorf("%s: %w", label, err)
	}
	if fi.IsDir() {
		d, err := safeio.OpenDir(p, label)
		if err != nil {
			return nil, noop, err
		}
		b, err := components.NewBundle(d, "directory "+p)
		if err != nil {
			_ = d.Close()
			return nil, noop, err
		}
		return b, func() { _ = d.Close() }, nil
	}
	f, err := safeio.Open(p, label)
	if err != nil {
		return nil, noop, verify.InputErrorf("%w: pass a Flux release's manifests.tar.gz or a directory of its files", err)
	}
	defer f.Close()
	b, cleanup, err = components.ExtractBundle(f, "tarball "+p)
	var be *components.BundleError
	if errors.As(err, &be) && len(be.Missing) == 0 {
		return nil, noop, verify.InputErrorf("--manifests %s is neither a directory nor a readable manifests.tar.gz: %w", p, be.Err)
	}
	return b, cleanup, err
}
