package check

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/crdschema"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/components"
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
func (s strictness) mode() string {
	if s.on {
		return "strict"
	}
	return "not strict"
}

// judged is what the release decides for the checks.
type judged struct {
	rel    fluxrelease.Release
	schema *crdschema.Validator // nil: not schema-checked (Old)
	strict strictness
}

// resolveRelease finds the release env deploys (fluxrelease.ForEnv), the
// CRDs that validate its Flux objects (the Flux Operator's version of them
// where a FluxInstance manages the cluster) and kustomize-controller's
// strictness there.
func resolveRelease(ctx context.Context, o Options, env *fluxrepo.Env) (*judged, error) {
	// The one resolution up, controllers, sync and status make too.
	rel, err := fluxrelease.ForEnvWith(env, o.FluxVersion, o.FluxVersionFrom, o.Bootstrap)
	if err != nil {
		return nil, err
	}
	j := &judged{rel: rel}
	if rel.Old {
		// kustomize-controller before v1.1.0 has no strict mode, and no
		// later release defaults it on before v1.9.0 (Flux 2.9).
		j.strict = strictness{why: fmt.Sprintf("Flux %s's kustomize-controller substitutes without StrictPostBuildSubstitutions (on by default only from kustomize-controller v1.9.0, Flux v2.9.0)", rel.Declared)}
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
	j.strict, err = strictOf(ctx, env, rel.Version)
	return j, err
}

// strictOf is kustomize-controller's effective StrictPostBuildSubstitutions
// as the environment deploys it: the release's Deployment with the
// repository's own customization of the controllers (a FluxInstance's
// spec.kustomize.patches, flux bootstrap's flux-system/kustomization.yaml
// patches; customize.UseRepository), the gate resolved from its args, else
// that controller version's default (fluxobj.EffectiveGate).
func strictOf(ctx context.Context, env *fluxrepo.Env, version string) (strictness, error) {
	ro := customize.Options{Components: components.DefaultOptions(version)}
	if err := ro.UseRepository(env); err != nil {
		return strictness{}, err
	}
	custom := ro.Overlays.Kind == customize.SourceInstance || ro.Overlays.Kind == customize.SourceRepository
	var deps []appsv1.Deployment
	var unread error
	if custom {
		out, err := customize.Run(ctx, ro)
		if err == nil {
			deps = out.Overlay.Final
		} else {
			// The sync and controllers phases refuse it; the offline
			// check judges by the release's default and says so.
			unread = fmt.Errorf("the repository's customization of the controllers (%s) does not render over Flux %s: %w", ro.Overlays.Name, version, err)
			custom = false
		}
	}
	if !custom {
		// The release's kustomize-controller as released: no render needed.
		b, err := components.EmbeddedBundle(version)
		if err != nil {
			return strictness{}, err
		}
		d, err := b.Deployment("kustomize-controller")
		if err != nil {
			return strictness{}, err
		}
		deps = []appsv1.Deployment{*d}
	}
	for i := range deps {
		d := &deps[i]
		if d.Name != "kustomize-controller" {
			continue
		}
		kv := fluxobj.ImageVersion(fluxobj.ManagerImage(d))
		f, err := fluxobj.ManagerFlags(d)
		if err != nil {
			return strictness{}, verify.InputErrorf("kustomize-controller of Flux %s as %s customizes it: %v; fix the --feature-gates value", version, ro.Overlays.Name, err)
		}
		g := fluxobj.EffectiveGate("kustomize-controller", kv, f, fluxobj.StrictSubstitution)
		s := strictness{on: g.Value, unread: unread}
		switch {
		case g.Explicit:
			s.why = fmt.Sprintf("%s=%t set by %s (kustomize-controller %s)", fluxobj.StrictSubstitution, g.Value, ro.Overlays.Name, kv)
		case g.DefaultKnown:
			s.why = fmt.Sprintf("kustomize-controller %s (Flux %s) defaults %s to %t", kv, version, fluxobj.StrictSubstitution, g.Default)
		default:
			s.why = fmt.Sprintf("kustomize-controller %s (Flux %s): the default of %s is not recorded, taken as off", kv, version, fluxobj.StrictSubstitution)
		}
		return s, nil
	}
	return strictness{why: fmt.Sprintf("Flux %s renders no kustomize-controller", version)}, nil
}

// releaseCheck states the release as a fact. An Old release is a skip:
// the Flux objects were not schema-checked.
func releaseCheck(j *judged, env *fluxrepo.Env, b *bootstrapfiles.Bootstrap) verify.Check {
	ev := []string{"post-build substitution: " + j.strict.why}
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
