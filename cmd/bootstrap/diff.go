package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/chartrender"
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

With --charts (off by default; it needs the network), every HelmRelease the diff installs
or upgrades has its chart fetched from its source (an OCIRepository chartRef; a
HelmRepository of type oci or https), anonymously and bounded (--charts-timeout, 10 MiB a
chart), trusting the system roots, --charts-ca-file and the source's certSecretRef ca.crt
when the repository renders it; rendered client-only with Helm's own libraries and the
values helm-controller composes (valuesFrom the repository renders, then spec.values), then
helm-controller's post-renderers (spec.postRenderers, commonMetadata, the origin labels);
and its manifests at both revisions are diffed per object, Secret values redacted. A chart
that cannot be fetched or rendered is a note on its HelmRelease, not a failure.

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
		cf chartFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cf.apply(cmd, &o); err != nil {
				return err
			}
			return a.diff(cmd, o, df, rf)
		},
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
	cf.add(fl)
	return cmd
}

// diffOutput are diff's output flags.
type diffOutput struct {
	exitCode bool
	limit    int
}

// chartFlags are diff's --charts flags (the network is used only with
// --charts).
type chartFlags struct {
	on      bool
	caFile  string
	timeout time.Duration
}

func (c *chartFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&c.on, "charts", false, "also render the chart of every HelmRelease installed or upgraded, at both revisions, and diff its manifests (fetches charts from their OCI or https sources: needs the network)")
	fl.StringVar(&c.caFile, "charts-ca-file", "", "PEM CA bundle trusted for chart sources, with the system roots (a source's rendered certSecretRef ca.crt is trusted too)")
	fl.DurationVar(&c.timeout, "charts-timeout", chartrender.DefaultTimeout, "bound on fetching each chart")
}

// apply validates the flags (before any request) and sets o.Charts.
func (c *chartFlags) apply(cmd *cobra.Command, o *diff.Options) error {
	fl := cmd.Flags()
	if !c.on {
		for _, n := range []string{"charts-ca-file", "charts-timeout"} {
			if fl.Changed(n) {
				return verify.InputErrorf("--%s applies to --charts: add --charts", n)
			}
		}
		return nil
	}
	if c.timeout <= 0 {
		return verify.InputErrorf("--charts-timeout %s: a positive duration (e.g. 60s)", c.timeout)
	}
	co := chartrender.Options{Timeout: c.timeout, CAFile: c.caFile}
	if err := co.Validate(); err != nil {
		return verify.InputErrorf("%v", err)
	}
	o.Charts = &co
	return nil
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
	// As check: no --root or --namespace, a self-applying root of another
	// name is the root.
	o.AdoptRoot = !input.Given(cmd.Flags(), "root") && !input.Given(cmd.Flags(), "namespace")
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
