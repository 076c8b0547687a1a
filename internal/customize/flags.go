package customize

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Preflight checks, before anything is read or requested, what the render
// would refuse of o without reading a file: the log level and, for the
// embedded bundle (no --manifests), the version and the components. The
// refusal names the flag (FlagError).
func Preflight(o Options) error {
	if o.Manifests != "" {
		return FlagError(components.CheckLogLevel(o.Components.LogLevel))
	}
	return FlagError(components.Preflight(o.Components))
}

// FlagError is err with pkg/components' typed refusals said in the CLI's
// words: an Options field becomes the flag that sets it, and a refused
// option or bundle a verify.InputError (exit code 2). Other errors pass
// through unchanged.
func FlagError(err error) error {
	var oe *components.OptionError
	var be *components.BundleError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe):
		allowed := strings.Join(oe.Allowed, ", ")
		switch {
		case oe.Field == "LogLevel":
			return verify.InputErrorf("--log-level %q is not one of %s", oe.Value, allowed)
		case oe.Field == "FluxVersion" && oe.Reason == "":
			return verify.InputErrorf("Flux %s is not embedded in this build (embedded: %s); pick one of those with --flux-version, or pass --manifests DIR|TARBALL with that release's manifests", oe.Value, allowed)
		case oe.Field == "Components" && oe.Value == "":
			return verify.InputErrorf("--components: no components selected; available in %s: %s", oe.Origin, allowed)
		case oe.Field == "Components":
			return verify.InputErrorf("--components/--components-extra: unknown component %s; available in %s: %s", oe.Value, oe.Origin, allowed)
		}
		return &verify.InputError{Err: err}
	case errors.As(err, &be):
		return &verify.InputError{Err: err}
	case errors.Is(err, bundles.ErrNotGenerated):
		return fmt.Errorf("this binary was built without the embedded Flux bundles (pkg/components/bundles/flux, committed: restore it with git, or run make generate) and rebuild, or pass --manifests DIR|TARBALL (%w)", bundles.ErrNotGenerated)
	}
	return err
}

// OpenManifests is the bundle --manifests p names: a directory, or a
// manifests.tar.gz unpacked into a temporary directory that cleanup
// removes. Every file is read under the input rule (safeio: a regular file
// inside the directory, bounded in size).
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
			return nil, noop, FlagError(err)
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
	return b, cleanup, FlagError(err)
}
