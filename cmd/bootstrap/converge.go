package main

import (
	"fmt"
	"os"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/pkg/apply"
	"github.com/homelab-ops/bootstrap/pkg/converge"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/kube"
	"github.com/homelab-ops/bootstrap/pkg/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/rootsync"
)

func newConvergeCommand(rf *reportFlags) *cobra.Command {
	var (
		o               = converge.DefaultOptions()
		repo, env, path string
		root            string
	)
	cmd := &cobra.Command{
		Use:   "converge",
		Short: "Wait until every Kustomization is Ready at its source's revision (step 4), nudging dependents",
		Long: `Walks the environment's dependsOn graph until every Flux Kustomization is Ready at its
generation and has applied its own source's current artifact revision. The graph comes from the
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
			report := gate.NewReport("converge")
			rootNS, rootName := o.Namespace, root
			if i := strings.IndexByte(root, '/'); i >= 0 {
				rootNS, rootName = root[:i], root[i+1:]
			}
			o.Root = converge.NodeID{Namespace: rootNS, Name: rootName}
			switch {
			case rootNS == "" || rootName == "":
				return fail(rf, report, gate.InputErrorf("--root %q: want NAME or NAMESPACE/NAME, e.g. flux-system/flux-system", root))
			case env != "" && path != "":
				return fail(rf, report, gate.InputErrorf("--env and --path are exclusive: --env NAME means --path clusters/NAME"))
			case env != "":
				path = "clusters/" + env
			case repo != "" && path == "":
				return fail(rf, report, gate.InputErrorf("--repo needs --env NAME or --path: which environment's graph? (without all three the graph is the live cluster's)"))
			}
			if o.GraphFile != "" && !converge.GraphFormatOK(o.GraphFile) {
				return fail(rf, report, gate.InputErrorf("--graph %s: name the file .md or .mmd (Mermaid) or .dot (Graphviz)", o.GraphFile))
			}
			if path != "" {
				if repo == "" {
					repo = "."
				}
				r, err := rootsync.Build(rootsync.Options{Repo: repo, Path: path, Namespace: o.Namespace, RootName: rootName})
				if err != nil {
					return fail(rf, report, err)
				}
				o.Declared, o.From = r.Kustomizations, "the repository "+path
				if o.Declared == nil {
					// No Kustomization rendered: still the repository's graph (converge.graph fails on the missing root).
					o.Declared = []*kustomizev1.Kustomization{}
				}
				report.Facts["path"] = path
			}
			cfg, err := kube.Config(rf.kube)
			if err != nil {
				return fail(rf, report, gate.InputErrorf("%w", err))
			}
			cl, err := apply.Connect(cfg)
			if err != nil {
				return fail(rf, report, err)
			}
			run := &pipeline.Run{Report: report, Progress: func(line string) {
				if rf.output == "text" {
					fmt.Fprintln(os.Stderr, "  "+line)
				}
			}}
			if err := pipeline.Execute(cmd.Context(), run, converge.NewPhase(cl, o)); err != nil {
				return fail(rf, report, err)
			}
			return finish(rf, report)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&repo, "repo", "", "the GitOps repository's root directory (with --env or --path; default . then)")
	fl.StringVar(&env, "env", "", "environment: the graph of clusters/NAME in --repo")
	fl.StringVar(&path, "path", "", "the cluster root inside --repo (instead of --env)")
	fl.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the root, the default for Kustomizations, and the one listed for a live graph")
	fl.StringVar(&root, "root", "flux-system/flux-system", "the root Kustomization, NAME or NAMESPACE/NAME")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for the whole graph")
	fl.BoolVar(&o.Nudge, "nudge", o.Nudge, "ask blocked or stale dependents to reconcile as soon as their dependencies converged, and failing nodes to retry")
	fl.IntVar(&o.Budget.Retries, "retries", o.Budget.Retries, "reconcile requests for a failing node before converge gives up on it (with --nudge)")
	fl.DurationVar(&o.Budget.FailAfter, "fail-after", o.Budget.FailAfter, "give up on a node failing at its current revision for this long")
	fl.StringVar(&o.GraphFile, "graph", "", "write the graph with verdicts to FILE: .md/.mmd (Mermaid) or .dot (Graphviz)")
	return cmd
}
