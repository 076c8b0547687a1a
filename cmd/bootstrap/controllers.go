package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/pkg/apply"
	"github.com/homelab-ops/bootstrap/pkg/controllers"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/kube"
	"github.com/homelab-ops/bootstrap/pkg/render"
	"github.com/homelab-ops/bootstrap/pkg/versions"
	"github.com/homelab-ops/bootstrap/pkg/wait"
)

func newControllersCommand(rf *reportFlags) *cobra.Command {
	pins, pinErr := versions.Load()
	f := &renderFlags{}
	var (
		dryRun   bool
		force    bool
		migrate  bool
		pruneCRD bool
		timeout  time.Duration
	)
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
			report := gate.NewReport("controllers")
			report.DryRun = dryRun
			var requests *atomic.Int64
			// Every exit reports how many API requests the run made.
			count := func() {
				if requests != nil {
					report.Facts["apiRequests"] = strconv.FormatInt(requests.Load(), 10)
				}
			}
			done := func() error { count(); return finish(rf, report) }
			failed := func(err error) error { count(); return fail(rf, report, err) }
			if pinErr != nil {
				return failed(pinErr)
			}
			opts, err := f.options()
			if err != nil {
				return failed(err)
			}
			ctx := cmd.Context()
			out, err := render.Run(ctx, opts)
			if err != nil {
				return failed(err)
			}
			report.Add(out.Checks...)
			for _, w := range out.Warnings {
				fmt.Fprintln(os.Stderr, "WARNING:", w)
				report.Warn(w)
			}
			for k, v := range out.Facts {
				report.Facts[k] = v
			}
			if report.ExitCode() == gate.ExitFailed {
				return done()
			}
			objs, err := apply.ReadObjects(out.YAML)
			if err != nil {
				return failed(err)
			}
			cfg, err := kube.Config(rf.kube)
			if err != nil {
				return failed(gate.InputErrorf("%w", err))
			}
			requests = kube.CountRequests(cfg)
			cl, err := apply.Connect(cfg)
			if err != nil {
				return failed(err)
			}

			fv := f.components.FluxVersion
			report.Add(controllers.Before(ctx, cl, objs, controllers.BeforeOptions{
				Namespace: f.components.Namespace, MinKubernetes: pins.MinKubernetes[fv], FluxVersion: fv, Force: force,
			})...)
			if report.ExitCode() != gate.ExitOK {
				return done()
			}
			dropped, err := apply.StoredVersions(ctx, cl, objs)
			if err != nil {
				return failed(err)
			}
			report.Add(controllers.StoredVersionsCheck(dropped, migrate))
			if report.ExitCode() != gate.ExitOK {
				return done()
			}

			plan, err := apply.Plan(ctx, cl, objs, dropped)
			if err != nil {
				return failed(err)
			}
			stale, err := apply.FindStale(ctx, cl, objs, f.components.Namespace, pruneCRD)
			if err != nil {
				return failed(err)
			}
			plan = apply.PlanStale(plan, stale)
			pruneReported := len(stale.Delete)+len(stale.Kept) > 0
			report.Objects = plan
			report.Changed = apply.Changed(plan)
			if rf.output == "text" {
				writePlan(os.Stderr, plan, dryRun)
			}
			if dryRun {
				if pruneReported {
					report.Add(controllers.PruneCheck(stale, true))
				}
				return done()
			}

			progress := func(line string) {
				if rf.output == "text" {
					fmt.Fprintln(os.Stderr, "  "+line)
				}
			}
			if err := apply.Migrate(ctx, cl, dropped, timeout, progress); err != nil {
				return failed(err)
			}
			applied, err := apply.Apply(ctx, cl, objs, plan, timeout)
			if len(applied) > 0 {
				report.Objects = applied
				report.Changed = apply.Changed(applied)
			}
			if err != nil {
				return failed(err)
			}
			pruned, err := apply.Prune(ctx, cl, stale)
			report.Objects = append(report.Objects, pruned...)
			report.Changed = apply.Changed(report.Objects)
			if err != nil {
				return failed(err)
			}
			if pruneReported {
				report.Add(controllers.PruneCheck(stale, false))
			}
			var deployments = out.Overlay.Final
			var workloads = objs[:0:0]
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					workloads = append(workloads, o)
				}
			}
			progress(fmt.Sprintf("waiting for %d Deployment(s) to roll out (timeout %s)", len(workloads), timeout))
			if err := wait.Rollouts(ctx, cl.Clients(), workloads, timeout, progress); err != nil {
				report.Add(gate.Check{ID: controllers.CheckRollout, Phase: controllers.Phase, Stage: gate.After,
					Title: "rollouts finished", Verdict: gate.Fail, Message: err.Error()})
				return done()
			}
			report.Add(controllers.After(ctx, cl, deployments)...)
			return done()
		},
	}
	addRenderFlags(cmd, f, pins)
	fl := cmd.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "print the plan (server-side dry run) and change nothing")
	fl.BoolVar(&force, "force", false, "apply even over a Flux managed by a Flux Kustomization or the Flux operator")
	fl.BoolVar(&migrate, "migrate-crds", false, "when the new CRDs drop a version objects are stored in, migrate those objects to the new storage version first")
	fl.BoolVar(&pruneCRD, "prune-crds", false, "also prune CRDs the render no longer has while custom resources still use them (deletes those resources)")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for CRDs and rollouts")
	return cmd
}

// writePlan prints the plan at a glance: counts, then every object that
// changes, with restarts and take-overs called out.
func writePlan(w io.Writer, plan []gate.ObjectChange, dryRun bool) {
	counts := map[string]int{}
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
	fmt.Fprintf(w, "%s: %d object(s): %d created, %d configured, %d deleted, %d unchanged\n", head, len(plan), counts["created"], counts["configured"], counts["deleted"], counts["unchanged"])
	for _, p := range plan {
		if p.Action == "unchanged" && len(p.TakenOverFrom) == 0 {
			continue
		}
		line := fmt.Sprintf("  %-10s %s", p.Action, p.Object)
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
