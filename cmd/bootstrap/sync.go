package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/flagvalue"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

// syncCmd holds sync's flags: one struct for the command.
type syncCmd struct {
	o      rootsync.RunOptions
	rf     repoFlags
	cf     convergeFlags
	sy     syncFlags
	dryRun bool
}

func newSyncCommand(a *app) *cobra.Command {
	c := &syncCmd{}
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
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(a, cmd) },
	}
	fl := cmd.Flags()
	c.rf.add(fl)
	c.cf.add(fl)
	fl.StringVar(&c.o.Build.Namespace, "namespace", DefaultFluxNamespace, "namespace of the root Kustomization")
	fl.Var(flagvalue.NewName(&c.o.Build.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	fl.BoolVar(&c.dryRun, "dry-run", false, "print the plan (server-side dry run) and change nothing")
	fl.Var(flagvalue.NewDuration(&c.o.Timeout, 5*time.Minute), "timeout", "how long to wait for the source and the root (must be positive)")
	c.sy.add(fl)
	return cmd
}

// run builds the environment and prepares the served snapshot before the
// first request, then runs static, sync, converge and (with
// --cutover-when-ready) cutover.
func (c *syncCmd) run(a *app, cmd *cobra.Command) error {
	run := a.newRun("sync", c.dryRun)
	run.OnPlan = func(plan []gate.ObjectChange) { a.writePlan(plan, c.dryRun) }
	phases, err := c.phases(a, cmd, run)
	if c.o.Serve != nil {
		defer c.o.Serve.Close()
	}
	if err != nil {
		return a.fail(cmd.Context(), run.Report, err)
	}
	a.writes("sync", c.o.Build.Namespace, c.dryRun)
	return a.execute(cmd.Context(), run, phases...)
}

func (c *syncCmd) phases(a *app, cmd *cobra.Command, run *pipeline.Run) ([]pipeline.Phase, error) {
	o := &c.o
	if err := c.sy.validate(*o); err != nil {
		return nil, err
	}
	var err error
	o.Build.Repo = c.rf.repo
	if o.Build.Path, err = c.rf.resolve(); err != nil {
		return nil, err
	}
	o.Source = c.sy.source()
	if o.Built, err = rootsync.Build(o.Build); err != nil {
		return nil, err
	}
	conv, err := c.cf.phase(a, o.Built, o.Build.Path, o.Timeout)
	if err != nil {
		return nil, err
	}
	if o.Serve, err = c.sy.serve.prepare(cmd.Context(), a, c.rf.repo, o.Built, c.dryRun); err != nil {
		return nil, err
	}
	phases := append(staticPhase(run, c.sy.withCheck, o.Built), rootsync.NewPhase(*o, a.connect))
	return append(append(phases, conv...), c.sy.serve.phase(a, o.Built, o.Timeout, o.Serve)...), nil
}
