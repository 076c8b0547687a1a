package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func newConvergeCommand(a *app) *cobra.Command {
	var (
		o               = converge.DefaultOptions()
		repo, env, path string
		root            string
	)
	cmd := &cobra.Command{
		Use:   "converge",
		Short: "Wait until every Kustomization and HelmRelease is Ready at its source's revision (step 4), nudging dependents",
		Long: `Walks the environment's dependsOn graph until every Flux Kustomization is Ready at its
generation and has applied its own source's current artifact revision, and every HelmRelease is
Ready at its generation with its newest Helm release made from the chart its source serves now. The graph comes from the
repository (--env or --path: Kustomizations not created yet are known) or from the live cluster.

Before: converge.graph (acyclic, every dependsOn target exists, every node reachable from the
root). Then watches (no polling) on Kustomizations and their sources re-evaluate every node on
every event. With --nudge (default) a blocked or stale node whose dependencies all converged is
asked to reconcile at once (reconcile.fluxcd.io/requestedAt) instead of after kustomize-controller's
30 s --requeue-dependency. A failing node gets a small retry budget, a suspended or stalled node
none; converge then stops without waiting out --timeout. After: converge.node/<ns>/<name>, one
gate per node: pass, fail (with evidence), or skip ("blocked by <name>").`,
		Example: `  bootstrap converge --env dev
  bootstrap converge                       # the live cluster's Kustomizations in flux-system
  bootstrap converge --env prod --timeout 15m --graph converge.md
  bootstrap converge --nudge=false -o json --report-json /var/log/bootstrap/converge.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.s.NewRun("converge", false)
			if err := convergeOptions(&o, root, repo, env, path); err != nil {
				return a.s.Fail(cmd.Context(), run.Report, err)
			}
			if o.Declared != nil {
				run.Report.Facts["path"] = path
				if env != "" {
					run.Report.Facts["path"] = "clusters/" + env
				}
			}
			return a.s.Execute(cmd.Context(), run, converge.NewPhase(a.s.Connect, o))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&repo, "repo", "", "the GitOps repository's root directory (with --env or --path; default . then)")
	fl.Var(input.NewEnv(&env), "env", "environment: the graph of clusters/NAME in --repo")
	fl.Var(input.NewRepoPath(&path), "path", "the cluster root inside --repo (instead of --env)")
	fl.Var(input.NewNamespace(&o.Namespace, o.Namespace), "namespace", "namespace of the root, the default for Kustomizations, and the one listed for a live graph")
	fl.Var(input.NewRef(&root, "flux-system/flux-system"), "root", "the root Kustomization, NAME or NAMESPACE/NAME")
	fl.Var(input.NewDuration(&o.Timeout, o.Timeout), "timeout", "how long to wait for the whole graph")
	addWalkFlags(fl, &o, "")
	return cmd
}

// convergeOptions resolves --root and the repository flags: with an
// environment the graph is the repository's (Kustomizations not created yet
// are known), without one the live cluster's.
func convergeOptions(o *converge.Options, root, repo, env, path string) error {
	rootNS, rootName := input.SplitRef(root, o.Namespace)
	o.Root = converge.NodeID{Namespace: rootNS, Name: rootName}
	if rootNS == "" || rootName == "" {
		return verify.InputErrorf("--root %q: want NAME or NAMESPACE/NAME, e.g. flux-system/flux-system", root)
	}
	repo, path, err := optionalEnv(repo, env, path, "the graph is the live cluster's")
	if err != nil || path == "" {
		return err
	}
	r, err := rootsync.Build(rootsync.Options{Repo: repo, Path: path, Namespace: o.Namespace, RootName: rootName})
	if err != nil {
		return err
	}
	flow.Declare(o, r)
	return nil
}

// graphFormats names the --graph formats converge.GraphFormatOK knows.
const graphFormats = ".md or .mmd (Mermaid) or .dot or .gv (Graphviz)"

// convergeFlags are the converge phase's flags on the commands that end
// with it (sync, cutover, up).
type convergeFlags struct {
	enabled bool
	o       converge.Options
}

func (f *convergeFlags) add(fl *pflag.FlagSet) {
	f.o = converge.DefaultOptions()
	fl.BoolVar(&f.enabled, "converge", true, "end with the converge phase: walk the dependsOn graph until every Kustomization is Ready at its source's revision (--converge=false: stop once the root applied)")
	addWalkFlags(fl, &f.o, "converge: ")
}

// addWalkFlags are the converge phase's own flags, defined once: on
// converge, and with the prefix "converge: " on the commands that end with
// the phase, so where they run it its flags reach it.
func addWalkFlags(fl *pflag.FlagSet, o *converge.Options, prefix string) {
	fl.BoolVar(&o.Nudge, "nudge", o.Nudge, prefix+"ask blocked or stale dependents to reconcile as soon as their dependencies converged, and failing nodes to retry")
	fl.Var(input.NewCount(&o.Budget.Retries, o.Budget.Retries), "retries", prefix+"reconcile requests for a failing node before converge gives up on it (with --nudge)")
	fl.Var(input.NewDurationOrZero(&o.Budget.FailAfter, o.Budget.FailAfter), "fail-after", prefix+"give up on a node failing at its current revision for this long (0: no limit but --timeout)")
	fl.Var(input.NewFormatFile(&o.GraphFile, converge.GraphFormatOK, graphFormats), "graph", prefix+"write the graph with verdicts to FILE: .md/.mmd (Mermaid) or .dot (Graphviz)")
}

// walkFlags are addWalkFlags' names, for the combination rule.
var walkFlags = []string{"nudge", "retries", "fail-after", "graph"}

// validate refuses the walk's flags given with --converge=false, where
// they would have no effect.
func (f *convergeFlags) validate(fl *pflag.FlagSet) error {
	if f.enabled {
		return nil
	}
	for _, n := range walkFlags {
		if input.Given(fl, n) {
			return verify.InputErrorf("--%s is the converge phase's and needs it: drop --converge=false", n)
		}
	}
	return nil
}

// options are the converge phase's (nil: --converge=false).
func (f *convergeFlags) options() *converge.Options {
	if !f.enabled {
		return nil
	}
	o := f.o
	return &o
}
