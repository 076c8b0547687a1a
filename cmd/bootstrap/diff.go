package main

import (
	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/diff"
	"github.com/homelab-ops/bootstrap/internal/gitrev"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
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

Output (-o): text (a summary line per changed Kustomization, the window's steps, then the
diffs), markdown (a pull-request comment: the window's steps first, a summary table, each
Kustomization's diff in a collapsible block, kept under GitHub's 65,536-character comment
limit by cutting the largest diffs first and naming them), json (schema bootstrap.diff/v1:
clusters, Kustomizations, objects with their change, action and diff, windows).

Exit codes: 0 no change, or changes without a failure; 1 a Kustomization (or a cluster's
root directory) fails to build at head, said as check says it; 2 input error (a flag, an
unknown revision, not a Git repository, no cluster root). With --exit-code, as git diff has
it: 0 no difference, 1 differences (a failure at head is one: the output names it), 2 input
error.`

func newDiffCommand(a *app) *cobra.Command {
	var (
		o  diff.Options
		df diffOutput
		rf repoFlags
	)
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what a change does to each cluster: rendered objects after substitution, controller actions, the window between commits",
		Long:  diffLong,
		Example: `  bootstrap diff                                  # this branch (or the uncommitted change) against main
  bootstrap diff --base main --head HEAD --env dev
  bootstrap diff --base v1.4.0 --head v1.5.0 -o json
  bootstrap diff --base origin/main -o markdown > comment.md   # a pull-request comment
  bootstrap diff --exit-code > /dev/null || echo "the change renders differently, or fails"`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{outputFormatsAnnotation: "markdown"},
		RunE:        func(cmd *cobra.Command, _ []string) error { return a.diff(cmd, o, df, rf) },
	}
	fl := cmd.Flags()
	rf.add(fl)
	fl.Var(input.NewNamespace(&o.Namespace, DefaultFluxNamespace), "namespace", "namespace of the root Kustomization")
	fl.Var(input.NewName(&o.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	fl.StringVar(&o.Base, "base", "", "the revision compared from (branch, tag, commit, HEAD~1); default: the merge-base of HEAD with the default branch, or HEAD when the work tree is dirty")
	fl.StringVar(&o.Head, "head", "", "the revision compared to; default: the work tree")
	fl.StringVar(&o.FluxVersion, "flux-version", "", "judge both revisions by this embedded Flux release (default: the release each declares, else the pinned one)")
	fl.BoolVar(&df.exitCode, "exit-code", false, "exit 1 when the revisions render differently (a failure at head included), 0 when not, as git diff --exit-code")
	fl.IntVar(&df.limit, "markdown-limit", 0, "-o markdown: the most bytes of the comment (default 64512: GitHub's 65,536-character limit less room for a comment step's header); the largest diffs are cut first")
	return cmd
}

// diffOutput are diff's output flags.
type diffOutput struct {
	exitCode bool
	limit    int
}

// diff validates every flag, then compares and writes the result.
func (a *app) diff(cmd *cobra.Command, o diff.Options, df diffOutput, rf repoFlags) error {
	if df.limit < 0 || (df.limit > 0 && df.limit < diff.MarkdownMinLimit) {
		return verify.InputErrorf("--markdown-limit %d: want at least %d bytes (0: GitHub's comment limit)", df.limit, diff.MarkdownMinLimit)
	}
	if df.limit != 0 && a.s.Output.Format != "markdown" {
		return verify.InputErrorf("--markdown-limit is for -o markdown (the output is %s): drop it, or add -o markdown", a.s.Output.Format)
	}
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
	switch a.s.Output.Format {
	case "json":
		err = diff.WriteJSON(cmd.OutOrStdout(), res)
	case "markdown":
		err = diff.WriteMarkdown(cmd.OutOrStdout(), res, diff.MarkdownOptions{Limit: df.limit})
	default:
		err = diff.WriteText(cmd.OutOrStdout(), res)
	}
	if err != nil {
		return err
	}
	if code := diffExitCode(res, df.exitCode); code != session.ExitOK {
		return &session.ExitError{Code: code}
	}
	return nil
}

// diffExitCode is diff's exit code (docs/diff.md "Exit codes"): 1 when a
// Kustomization or a cluster's root fails at head; with --exit-code, 1
// when anything differs (a failure is a difference), as git diff.
func diffExitCode(res *diff.Result, exitCode bool) int {
	if res.Failed() || (exitCode && res.Changed()) {
		return session.ExitFailed
	}
	return session.ExitOK
}
