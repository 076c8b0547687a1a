package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
)

// cutoverFlags are cutover's flags: the phase's options, --dry-run and
// the converge phase's flags.
type cutoverFlags struct {
	o      cutover.Options
	dryRun bool
	cf     convergeFlags
}

func newCutoverCommand(a *app) *cobra.Command {
	f := &cutoverFlags{}
	o, cf := &f.o, &f.cf
	cmd := &cobra.Command{
		Use:   "cutover",
		Short: "Move a cluster synced from a temporary source to its final source",
		Long: `Switches the GitRepository that 'bootstrap sync --source-url' put on a temporary source to
its final source (--to, default the URL git declares, recorded at sync), waits for the final
source's artifact, hands the GitRepository back to git (the reconcile-disabled and provenance
annotations removed), and proves every Kustomization reading the source is Ready at the new
revision. If the final source is not Ready within --timeout, it switches back to the temporary
source, proves that Ready again, and exits 1 with the evidence. Each wait gets --timeout of its
own: the final source, then the Kustomizations, or the final source, then the rollback.

An interrupt (SIGINT, SIGTERM) while waiting for the final source rolls back first, then
exits 130 (143). A second interrupt stops at once; then run 'bootstrap cutover' again.`,
		Example: `  bootstrap cutover
  bootstrap cutover --to https://gitea.prod.lan/homelab/gitops.git --timeout 5m
  bootstrap cutover --dry-run -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			run := a.s.NewRun("cutover", f.dryRun)
			if err := errors.Join(cutover.Validate(*o), cf.validate(cmd.Flags())); err != nil {
				return a.s.Fail(ctx, run.Report, err)
			}
			a.s.Writes("cutover", o.Namespace, f.dryRun)
			plan, err := flow.Assemble(ctx, flow.Options{Cutover: o, Converge: cf.options(), DryRun: f.dryRun, Timeout: o.Timeout, Cluster: a.opener()}, run.Report)
			if err != nil {
				return a.s.Fail(ctx, run.Report, err)
			}
			return a.s.Execute(ctx, run, plan.Phases...)
		},
	}
	fl := cmd.Flags()
	cf.add(fl)
	fl.Var(input.NewGitURL(&o.To), "to", "the final source URL (default: the URL git declares, recorded by sync)")
	fl.Var(input.NewNamespace(&o.Namespace, DefaultFluxNamespace), "namespace", "namespace of the GitRepository")
	fl.Var(input.NewName(&o.Name, DefaultFluxNamespace, "GitRepository"), "source", "name of the GitRepository")
	fl.Var(input.NewDuration(&o.Timeout, 3*time.Minute), "timeout", "how long to wait for the final source, then for the Kustomizations; a rollback (the final source not Ready in time, or an interrupt while waiting for it) gets its own wait of the same length, so the command can take up to twice this (must be positive)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "say what would be switched and change nothing")
	return cmd
}
