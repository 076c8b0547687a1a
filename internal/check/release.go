package check

import (
	"context"
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/crdschema"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Release is the gate stating the Flux release the environment is judged
// by: a fact (pass), or a skip when the release is older than every
// embedded one (its CRDs cannot validate the Flux objects).
var Release = verify.Def{ID: "check.flux-release", Phase: PhaseName, Stage: verify.Before,
	Title: "the Flux release the repository deploys is known, and its CRDs validate the Flux objects"}

// strictness is kustomize-controller's effective StrictPostBuildSubstitutions
// on the release judged by, and why.
type strictness struct {
	on  bool
	why string // e.g. "kustomize-controller v1.4.0 defaults it off"
	// unread: the repository's customization of the controllers could
	// not be rendered, so the release's default was taken (a warning).
	unread error
}

// mode names it for messages.
func (s strictness) mode() string { return fluxrelease.Strictness{On: s.on}.Mode() }

// judged is what the release decides for the checks.
type judged struct {
	rel    fluxrelease.Release
	schema *crdschema.Validator // nil: not schema-checked (Old)
	controller
}

// resolveRelease finds the release env deploys and kustomize-controller
// there (fluxrelease.Deployed, as diff does), and the CRDs that validate
// its Flux objects (the Flux Operator's version of them where a
// FluxInstance manages the cluster).
func resolveRelease(ctx context.Context, o Options, env *fluxrepo.Env) (*judged, error) {
	// The release is the one up, controllers, sync and status resolve too
	// (fluxrelease.ForEnv).
	rel, kc, err := fluxrelease.Deployed(ctx, env, o.FluxVersion, o.FluxVersionFrom, o.Bootstrap)
	if err != nil {
		return nil, err
	}
	j := &judged{rel: rel, controller: controllerOf(env, kc)}
	if rel.Old {
		return j, nil
	}
	if rel.Operator != nil {
		j.schema, err = crdschema.ForFluxOperator(rel.Version)
	} else {
		j.schema, err = crdschema.ForFlux(rel.Version)
	}
	if err != nil {
		return nil, err
	}
	return j, nil
}

// releaseCheck states the release as a fact. An Old release is a skip:
// the Flux objects were not schema-checked.
func releaseCheck(j *judged, env *fluxrepo.Env, b *bootstrapfiles.Bootstrap) verify.Check {
	ev := []string{"post-build substitution: " + j.strict.why, j.watch.fact()}
	ev = append(ev, j.flags...)
	// What the repository's bootstrap does before Flux (the install it
	// pins among them).
	ev = append(ev, b.Evidence()...)
	if j.rel.Operator != nil {
		ev = append(ev, fmt.Sprintf("a FluxInstance manages the cluster (%s): the notification CRDs are validated as the Flux Operator installs them (FluxInstance, ResourceSet, ResourceSetInputProvider added to Alert and Receiver kinds)", *j.rel.Operator))
	}
	ev = append(ev, j.rel.Notes...)
	if j.rel.Fails != "" {
		return Release.Fail(fmt.Sprintf("%s %q at %s: %s; the rest is judged by the default Flux %s — fix: %s", j.rel.Form, j.rel.Declared, j.rel.Location, j.rel.Fails, j.rel.Version, j.rel.Fix), ev...)
	}
	if j.strict.unread != nil {
		return Release.Warn(fmt.Sprintf("%s; %v, so StrictPostBuildSubstitutions is taken at kustomize-controller's default", j.rel, j.strict.unread), ev...)
	}
	if j.rel.Old {
		n := 0
		for _, k := range env.Kustomizations {
			for _, r := range k.Resources {
				if fluxGroup(r.GetApiVersion()) {
					n++
				}
			}
		}
		return Release.Skip(fmt.Sprintf("%s: its CRDs are not in this build, so %d Flux object(s) were not checked against a schema; pass --flux-version with an embedded release to check them against that one", j.rel, n), ev...)
	}
	if j.rel.Fallback {
		return Release.Warn(j.rel.String(), ev...)
	}
	return Release.Pass(j.rel.String(), ev...)
}
