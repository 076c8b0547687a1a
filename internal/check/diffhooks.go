package check

import (
	"context"
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// Substitution mode and build failures as the offline check judges them,
// exported for `bootstrap diff` (internal/diff), which renders two
// revisions with the same rules.

// Strictness is kustomize-controller's effective
// StrictPostBuildSubstitutions on the Flux release env deploys (the
// release check.flux-release names: fluxVersion when given, else the one
// the repository declares, else the pinned one), with why, and the
// release. on: an undefined ${VAR} fails the Kustomization's build; off:
// it renders as the empty string.
//
// b is the repository's bootstrap (bootstrapfiles.Read, nil: none), whose
// Flux install counts as in check (a Taskfile's
// flux2/manifests/install?ref=…).
func Strictness(ctx context.Context, env *fluxrepo.Env, fluxVersion string, b *bootstrapfiles.Bootstrap) (on bool, why string, rel fluxrelease.Release, err error) {
	j, err := resolveRelease(ctx, Options{FluxVersion: fluxVersion, FluxVersionFrom: "--flux-version", Bootstrap: b}, env)
	if err != nil {
		return false, "", fluxrelease.Release{}, err
	}
	return j.strict.on, j.strict.why, j.rel, nil
}

// BuildFailure is what check says of Kustomization k whose path does not
// build (k.Err set): "file:line: Kustomization ns/name: … — fix: …", the
// [build] finding's words.
func BuildFailure(env *fluxrepo.Env, k *fluxrepo.Kustomization) string {
	if k.Err == nil {
		return ""
	}
	f := buildFinding(env, k)
	return fmt.Sprintf("%s: %s — fix: %s", f.location(), f.Message, f.Fix)
}
