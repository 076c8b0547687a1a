package flow

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Choice is the Flux release chosen for a run, if one was: FluxVersion
// from --flux-version (the command line, --versions-file or the
// environment; "": none), From says which, for the report. Without one the
// run takes the release the repository declares, as check does
// (fluxrelease.ForEnv), else the pinned default.
type Choice struct {
	FluxVersion, From string
}

// ReleaseFact is the report's fact naming the run's release.
const ReleaseFact = "fluxRelease"

// InstallRelease resolves the release a run installs over env (nil: no
// environment read, the choice or the default) and makes the controllers'
// render that release's: its bundle (the components checked against it
// again, components.Preflight) and its minimum Kubernetes. A release the
// repository declares that this build does not embed is refused before
// the first request (fluxrelease.Release.Installable). With --manifests
// the render is the directory's and the version only labels it: the
// release is resolved and reported, the render left as the flags say.
func InstallRelease(env *fluxrepo.Env, co *controllers.Options, c Choice) (fluxrelease.Release, error) {
	rel, err := resolve(env, c, co.Render.Components.FluxVersion)
	if err != nil {
		return rel, err
	}
	if co.Render.Manifests != "" {
		return rel, nil
	}
	embedded, err := components.EmbeddedVersions()
	if err != nil {
		return rel, err
	}
	if err := rel.Installable(embedded); err != nil {
		return rel, err
	}
	if err := useRelease(&co.Render, rel); err != nil {
		return rel, err
	}
	pins, err := versions.Load()
	if err != nil {
		return rel, err
	}
	co.MinKubernetes = pins.MinKubernetes[rel.Version]
	return rel, nil
}

// JudgeRelease resolves the release a read-only run (status) compares the
// cluster with over env, as check judges it: a declared release this build
// does not embed is judged by the nearest embedded one, and said so in the
// returned warning ("": none).
func JudgeRelease(env *fluxrepo.Env, ro *customize.Options, c Choice) (fluxrelease.Release, string, error) {
	rel, err := resolve(env, c, ro.Components.FluxVersion)
	if err != nil || ro.Manifests != "" {
		return rel, "", err
	}
	embedded, err := components.EmbeddedVersions()
	if err != nil {
		return rel, "", err
	}
	if rel.Version == "" { // Old: the default's render stands
		return rel, fmt.Sprintf("%s: the controllers are compared with the render of Flux %s, the default", rel, ro.Components.FluxVersion), nil
	}
	var warn string
	if rel.Installable(embedded) != nil {
		warn = fmt.Sprintf("%s: the controllers are compared with the render of Flux %s", rel, rel.Version)
	}
	return rel, warn, useRelease(ro, rel)
}

// resolve is the release of env (nil: the choice, else def).
func resolve(env *fluxrepo.Env, c Choice, def string) (fluxrelease.Release, error) {
	if env == nil {
		if c.FluxVersion == "" {
			return fluxrelease.Chosen("", "", def), nil
		}
		return fluxrelease.Chosen(c.FluxVersion, c.From, def), nil
	}
	return fluxrelease.ForEnv(env, c.FluxVersion, c.From)
}

// useRelease renders rel's bundle, the components checked against it.
func useRelease(ro *customize.Options, rel fluxrelease.Release) error {
	if rel.Version == ro.Components.FluxVersion {
		return nil
	}
	ro.Components.FluxVersion = rel.Version
	if err := customize.Preflight(*ro); err != nil {
		return &verify.InputError{Err: &ReleaseRefusal{Release: rel, Err: err}}
	}
	return nil
}

// ReleaseRefusal is the run's release refusing the render's options (the
// components checked against its bundle: useRelease). Err is the refusal
// as customize.Preflight returns it, pkg/components' typed error, which
// the command line words with its flags.
type ReleaseRefusal struct {
	Release fluxrelease.Release
	Err     error
}

func (e *ReleaseRefusal) Error() string { return fmt.Sprintf("%s: %v", e.Release, e.Err) }

// Unwrap returns Err.
func (e *ReleaseRefusal) Unwrap() error { return e.Err }

// release resolves the run's one release over the environment built (nil:
// none) and makes the controllers phase install it; the report's fact
// names it. nil when the run has neither.
func (o *Options) release(built *rootsync.Render, r *verify.Report) (*fluxrelease.Release, error) {
	var env *fluxrepo.Env
	if built != nil {
		env = built.Env
	}
	if o.Controllers == nil && env == nil {
		return nil, nil
	}
	var rel fluxrelease.Release
	var err error
	if o.Controllers != nil {
		co := *o.Controllers
		rel, err = InstallRelease(env, &co, o.Release)
		o.Controllers = &co
	} else {
		rel, err = resolve(env, o.Release, "")
	}
	if err != nil {
		return nil, err
	}
	r.Facts[ReleaseFact] = rel.String()
	return &rel, nil
}
