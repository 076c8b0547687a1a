package main

import (
	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/diff"
	"github.com/homelab-ops/bootstrap/internal/gitrev"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/session"
)

// diffLong is diff's help text (docs/reference is generated from it).
const diffLong = `Compares two revisions of the GitOps repository as the cluster will see them: for every
cluster root the repository declares (or the one --env/--path names), every Flux
Kustomization is built at both revisions exactly as kustomize-controller builds it, each
object substituted as the release's kustomize-controller substitutes it (strict or not, as
check judges the release), then compared, keyed by group/kind/namespace/name after
substitution.

Both revisions are read from the Git object store in-process (no checkout, no clone, nothing
written into the repository). --base defaults to the merge-base of HEAD with the default
branch (origin/HEAD, else main, else master), or HEAD when the work tree has uncommitted
changes; --head defaults to the work tree.

Per Kustomization it says what is added, removed (and whether prune deletes it: spec.prune
true and no kustomize.toolkit.fluxcd.io/prune: disabled) and changed (a unified diff), and
what the controllers will do, once per object: Helm install/upgrade/uninstall, a rollout when a
pod template changes, a CRD change, a pruned Namespace deleting everything in it. Secret values
and SOPS-encrypted values are never shown: each is a keyed hash, equal only when the values are.

The window between the commits: for each knob the change adds or changes in a substituteFrom
ConfigMap or Secret, a Kustomization reading it that does not wait (by same-source dependsOn)
for the Kustomization applying it is rendered with the object as it was at base — what it
applies if it reconciles first — and shown as its own WINDOW step.

Exit codes: 0 no change, or changes without a failure; 1 a Kustomization (or a cluster's
root directory) fails to build at head, said as check says it; 2 input error (a flag, an
unknown revision, not a Git repository, no cluster root).`

func newDiffCommand(a *app) *cobra.Command {
	var (
		o  diff.Options
		rf repoFlags
	)
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what a change does to each cluster: rendered objects after substitution, controller actions, the window between commits",
		Long:  diffLong,
		Example: `  bootstrap diff                                  # this branch (or the uncommitted change) against main
  bootstrap diff --base main --head HEAD --env dev
  bootstrap diff --base v1.4.0 --head v1.5.0 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.diff(cmd, o, rf) },
	}
	fl := cmd.Flags()
	rf.add(fl)
	fl.Var(input.NewNamespace(&o.Namespace, DefaultFluxNamespace), "namespace", "namespace of the root Kustomization")
	fl.Var(input.NewName(&o.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	fl.StringVar(&o.Base, "base", "", "the revision compared from (branch, tag, commit, HEAD~1); default: the merge-base of HEAD with the default branch, or HEAD when the work tree is dirty")
	fl.StringVar(&o.Head, "head", "", "the revision compared to; default: the work tree")
	fl.StringVar(&o.FluxVersion, "flux-version", "", "judge both revisions by this embedded Flux release (default: the release each declares, else the pinned one)")
	return cmd
}

// diff validates every flag, then compares and writes the result.
func (a *app) diff(cmd *cobra.Command, o diff.Options, rf repoFlags) error {
	if err := gitrev.CheckRev("--base", o.Base); err != nil {
		return err
	}
	if err := gitrev.CheckRev("--head", o.Head); err != nil {
		return err
	}
	if err := check.Preflight(check.Options{FluxVersion: o.FluxVersion}); err != nil {
		return err
	}
	o.Repo = rf.repo
	if rf.env != "" || rf.path != "" {
		p, err := rf.resolve()
		if err != nil {
			return err
		}
		o.Path = p
	}
	res, err := diff.Run(cmd.Context(), o)
	if err != nil {
		return err
	}
	if a.s.Output.Format == "json" {
		err = diff.WriteJSON(cmd.OutOrStdout(), res)
	} else {
		err = diff.WriteText(cmd.OutOrStdout(), res)
	}
	if err != nil {
		return err
	}
	if res.Failed() {
		return &session.ExitError{Code: session.ExitFailed}
	}
	return nil
}
