package main

import (
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// DefaultFluxNamespace is where Flux, its root Kustomization and the age-key
// Secret live unless a flag says otherwise.
const DefaultFluxNamespace = fluxobj.DefaultNamespace

// --force has one meaning on every command that has it: proceed past the
// before-gates that refuse by default, each then reported as warn. Each
// command names the gates it passes; up passes those of every phase it runs.
const (
	forceUsage       = "proceed past the before-gates that refuse by default, each then reported as warn: "
	forceControllers = "controllers.ownership (a Flux managed by a Flux Kustomization or the Flux operator: apply over it)"
	forceAgeKey      = "age-key.scope, age-key.recipient, age-key.decrypt (the key decrypts none or not all of the environment's SOPS files: install it)"
)

// repoFlags pick the GitOps repository and the environment in it, the same
// way for every command that reads one.
type repoFlags struct {
	repo, env, path string
}

func (f *repoFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.repo, "repo", ".", "the GitOps repository's root directory")
	fl.Var(input.NewEnv(&f.env), "env", "environment: clusters/NAME in --repo")
	fl.Var(input.NewRepoPath(&f.path), "path", "the environment's directory inside --repo, e.g. clusters/dev (instead of --env)")
}

// resolve returns the environment's path inside the repository.
func (f *repoFlags) resolve() (string, error) {
	switch {
	case f.env != "" && f.path != "":
		return "", verify.InputErrorf("--env and --path are exclusive: --env NAME means --path clusters/NAME")
	case f.env != "":
		return "clusters/" + f.env, nil
	case f.path == "":
		return "", verify.InputErrorf("which environment? pass --env NAME (clusters/NAME) or --path")
	}
	return f.path, nil
}

// optionalEnv resolves the environment of a command that can also read the
// live cluster alone (converge, status): path "" without --repo, --env and
// --path; otherwise the repository (default .) and the environment's path.
// without says what the command does without one.
func optionalEnv(repo, env, path, without string) (string, string, error) {
	switch {
	case env != "" && path != "":
		return "", "", verify.InputErrorf("--env and --path are exclusive: --env NAME means --path clusters/NAME")
	case env != "":
		path = "clusters/" + env
	case repo != "" && path == "":
		return "", "", verify.InputErrorf("--repo needs --env NAME or --path: which environment? (without all three %s)", without)
	}
	if path != "" && repo == "" {
		repo = "."
	}
	return repo, path, nil
}
