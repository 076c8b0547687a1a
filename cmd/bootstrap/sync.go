package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/flagvalue"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/rootsync"
)

func newSyncCommand(a *app) *cobra.Command {
	var (
		o      rootsync.RunOptions
		rf     repoFlags
		cf     convergeFlags
		sy     syncFlags
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Apply an environment's cluster root (step 3), optionally from a temporary source",
		Long: `Builds the environment's root kustomization (clusters/<env>) in-process, as kustomize-controller
would, checks it (the root Kustomization is there with wait: false, every dependsOn target is
rendered, the root's GitRepository is rendered, every decryption Secret exists in the cluster),
prints the plan, server-side applies it, and proves that the GitRepository is Ready with an
artifact and the root Kustomization applied that artifact's revision.

With --source-url the GitRepository is pointed at a temporary source (a mirror, for a cold
bring-up): it is annotated kustomize.toolkit.fluxcd.io/reconcile=disabled so the root does not
undo the override, and records the temporary URL, since when, and the URL git declares. A later
sync keeps a temporary source (and says so) until 'bootstrap cutover'.

With --serve this machine is the temporary source: a detached process serves the checkout's
commit (a clean tree on the branch git declares) over HTTPS with a CA and token made for the run
(in the Secret bootstrap-serve-auth), read-only, until the GitRepository reads another URL, until
--serve-for, or 'bootstrap serve stop'. --cutover-when-ready then waits, after converge, until the
cluster reaches the URL git declares at the served revision, and cuts over.`,
		Example: `  bootstrap sync --repo . --env dev
  bootstrap sync --env prod --dry-run
  bootstrap sync --env prod --source-url https://mirror.lan/homelab/gitops.git --source-secret mirror-auth
  bootstrap sync --env prod --serve --cutover-when-ready
  bootstrap sync --env dev -o json --report-json /var/log/bootstrap/sync.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.newRun("sync", dryRun)
			run.OnPlan = func(plan []gate.ObjectChange) { a.writePlan(plan, dryRun) }
			if err := sy.validate(o); err != nil {
				return a.fail(run.Report, err)
			}
			var err error
			o.Build.Repo = rf.repo
			if o.Build.Path, err = rf.resolve(); err != nil {
				return a.fail(run.Report, err)
			}
			o.Source = sy.source()
			// The environment is built before the first request.
			if o.Built, err = rootsync.Build(o.Build); err != nil {
				return a.fail(run.Report, err)
			}
			conv, err := cf.phase(a, o.Built, o.Build.Path, o.Timeout)
			if err != nil {
				return a.fail(run.Report, err)
			}
			if o.Serve, err = sy.serve.prepare(cmd.Context(), a, rf.repo, o.Built, dryRun); err != nil {
				return a.fail(run.Report, err)
			}
			if o.Serve != nil {
				defer o.Serve.Close()
			}
			a.writes("sync", o.Build.Namespace, dryRun)
			phases := append(staticPhase(run, sy.withCheck, o.Built), rootsync.NewPhase(o, a.connect))
			phases = append(append(phases, conv...), sy.serve.phase(a, o.Built, o.Timeout, o.Serve)...)
			return a.execute(cmd.Context(), run, phases...)
		},
	}
	fl := cmd.Flags()
	rf.add(fl)
	cf.add(fl)
	fl.StringVar(&o.Build.Namespace, "namespace", DefaultFluxNamespace, "namespace of the root Kustomization")
	fl.Var(flagvalue.NewName(&o.Build.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	fl.BoolVar(&dryRun, "dry-run", false, "print the plan (server-side dry run) and change nothing")
	fl.Var(flagvalue.NewDuration(&o.Timeout, 5*time.Minute), "timeout", "how long to wait for the source and the root (must be positive)")
	sy.add(fl)
	return cmd
}
