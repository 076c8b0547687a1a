package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func newControllersCommand(a *app) *cobra.Command {
	f := &renderFlags{}
	rf := &repoFlags{}
	o := controllers.Options{}
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Apply the customized Flux controllers (step 1) and prove the flags run",
		Long: `Renders the Flux components with the overlays (as 'bootstrap render'), checks the cluster
(reachable, version, permissions, namespace, ownership), prints the plan — every object created,
configured or unchanged, and which controllers restart — then server-side applies it, watches the
rollouts, and proves the live Deployments carry the rendered flags.`,
		Example: `  bootstrap controllers --dry-run
  bootstrap controllers --flux-version v2.4.0 --components-extra image-reflector-controller,image-automation-controller
  bootstrap controllers -o json --report-json /var/log/bootstrap/controllers.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.s.NewRun("controllers", dryRun)
			var err error
			if o.Render, err = f.options(); err != nil {
				return a.s.Fail(cmd.Context(), run.Report, err)
			}
			o.MinKubernetes = a.pins.MinKubernetes[o.Render.Components.FluxVersion]
			rel, err := useRepository(&o, rf, a.releaseChoice(cmd.Flags()))
			if err != nil {
				return a.s.Fail(cmd.Context(), run.Report, err)
			}
			if rel != nil {
				run.Report.Facts[flow.ReleaseFact] = rel.String()
				a.releaseLine(rel)
			}
			a.s.CountRequests()
			a.s.Installs("controllers", o.Render.Components.Namespace, dryRun)
			// The plan is printed before the apply's progress lines.
			run.OnPlan = func(plan []verify.ObjectChange) { a.writePlan(plan, dryRun) }
			return a.s.Execute(cmd.Context(), run, controllers.NewPhase(o, a.s.Connect))
		},
	}
	addRenderFlags(cmd, f, a.pins)
	releaseFromRepository(cmd, a.pins, "install (without --repo/--env/--path: default the pinned one)")
	fl := cmd.Flags()
	fl.StringVar(&rf.repo, "repo", "", "the GitOps repository's root directory (with --env or --path; default . then)")
	fl.Var(input.NewEnv(&rf.env), "env", "environment: clusters/NAME in --repo, whose flux-system/kustomization.yaml customizes the controllers (the flux bootstrap layout)")
	fl.Var(input.NewRepoPath(&rf.path), "path", "the environment's directory inside --repo (instead of --env)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the plan (server-side dry run) and change nothing")
	fl.BoolVar(&o.Force, "force", false, forceUsage+forceControllers)
	fl.BoolVar(&o.MigrateCRDs, "migrate-crds", false, "when the new CRDs drop a version objects are stored in, migrate those objects to the new storage version first")
	fl.BoolVar(&o.PruneCRDs, "prune-crds", false, "also prune CRDs the render no longer has while custom resources still use them (deletes those resources)")
	fl.Var(input.NewDuration(&o.Timeout, 5*time.Minute), "timeout", "how long to wait for CRDs and rollouts (must be positive)")
	return cmd
}

// useRepository renders the release the environment's repository declares
// (unless c chose one; flow.InstallRelease, as up) with the customization
// it keeps (the `flux bootstrap` layout), when --env or --path names one;
// without them the controllers are rendered from the flags alone (rel nil).
func useRepository(o *controllers.Options, rf *repoFlags, c flow.Choice) (*fluxrelease.Release, error) {
	repo, path, err := optionalEnv(rf.repo, rf.env, rf.path, "the controllers are rendered from the flags alone")
	if err != nil || path == "" {
		return nil, err
	}
	ro := &o.Render
	env, err := fluxrepo.Load(fluxrepo.Options{Repo: repo, Path: path, Namespace: ro.Components.Namespace, RootName: ro.Components.Namespace, KeepGoing: true})
	if err != nil {
		return nil, err
	}
	rel, err := flow.InstallRelease(env, o, c)
	if err != nil {
		return nil, err
	}
	return &rel, ro.UseRepository(env)
}

// writePlan prints the plan at a glance: counts, then every object that
// changes, with restarts and take-overs called out.
func (a *app) writePlan(plan []verify.ObjectChange, dryRun bool) {
	var b strings.Builder
	writePlan(&b, plan, dryRun)
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		a.s.Line(line)
	}
}

// writePlan prints a plan to w.
func writePlan(w io.Writer, plan []verify.ObjectChange, dryRun bool) {
	counts := map[ssa.Action]int{}
	var restarts []string
	for _, p := range plan {
		counts[p.Action]++
		if p.Restarts {
			restarts = append(restarts, p.Object)
		}
	}
	head := "plan"
	if dryRun {
		head = "plan (dry run, nothing applied)"
	}
	fmt.Fprintf(w, "%s: %d object(s): %d created, %d configured, %d deleted, %d unchanged\n", head, len(plan), counts[ssa.CreatedAction], counts[ssa.ConfiguredAction], counts[ssa.DeletedAction], counts[ssa.UnchangedAction])
	for _, p := range plan {
		if p.Action == ssa.UnchangedAction && len(p.TakenOverFrom) == 0 && p.Note == "" {
			continue
		}
		line := fmt.Sprintf("  %-10s %s", p.Action, p.Object)
		if p.Note != "" {
			line += "  (" + p.Note + ")"
		}
		if p.Restarts {
			line += "  (pod template changes: restarts)"
		}
		if len(p.TakenOverFrom) > 0 {
			line += "  (takes over from " + strings.Join(p.TakenOverFrom, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	if len(restarts) == 0 {
		fmt.Fprintln(w, "restarts: none")
	} else {
		fmt.Fprintln(w, "restarts:", strings.Join(restarts, ", "))
	}
}
