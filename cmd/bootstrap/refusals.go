package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The command line's words where the libraries say their own: its flags
// for pkg/components' typed refusals (flagError) and in the render's
// proofs (proofPhrases).

// flagError is err with pkg/components' typed refusals said in the
// command line's words: an Options field becomes the flag that sets it,
// and a refused option or bundle a verify.InputError (exit code 2). A
// refusal of the run's release keeps the release (flow.ReleaseRefusal).
// Other errors pass through unchanged. The session applies it to whatever
// stops a run (session.Session.Reword).
func flagError(err error) error {
	var oe *components.OptionError
	var be *components.BundleError
	var rr *flow.ReleaseRefusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rr):
		return verify.InputErrorf("%s: %v", rr.Release, flagError(rr.Err))
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

// proofPhrases name the render flags in the proofs' messages.
var proofPhrases = patches.Phrases{
	Plain:         "--plain",
	Components:    "--components",
	StrictOverlay: fmt.Sprintf("the shipped overlays (or an --overlays dir that appends --%s=%s=true)", patches.FeatureGatesFlag, patches.StrictSubstitution),
	Regenerate: func(dir string) string {
		return fmt.Sprintf("`bootstrap render --plain --output-dir %s` with this run's --flux-version and component flags", dir)
	},
}
