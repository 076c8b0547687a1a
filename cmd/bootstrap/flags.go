package main

import (
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/flagvalue"
	"github.com/homelab-ops/bootstrap/pkg/gate"
)

// DefaultFluxNamespace is where Flux, its root Kustomization and the age-key
// Secret live unless a flag says otherwise.
const DefaultFluxNamespace = "flux-system"

// repoFlags pick the GitOps repository and the environment in it, the same
// way for every command that reads one.
type repoFlags struct {
	repo, env, path string
}

func (f *repoFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.repo, "repo", ".", "the GitOps repository's root directory")
	fl.Var(flagvalue.NewEnv(&f.env), "env", "environment: clusters/NAME in --repo")
	fl.Var(flagvalue.NewRepoPath(&f.path), "path", "the environment's directory inside --repo, e.g. clusters/dev (instead of --env)")
}

// resolve returns the environment's path inside the repository.
func (f *repoFlags) resolve() (string, error) {
	switch {
	case f.env != "" && f.path != "":
		return "", gate.InputErrorf("--env and --path are exclusive: --env NAME means --path clusters/NAME")
	case f.env != "":
		return "clusters/" + f.env, nil
	case f.path == "":
		return "", gate.InputErrorf("which environment? pass --env NAME (clusters/NAME) or --path")
	}
	return f.path, nil
}
