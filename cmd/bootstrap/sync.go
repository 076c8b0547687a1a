package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// syncCmd holds sync's flags: one struct for the command.
type syncCmd struct {
	env     rootsync.Options
	rf      repoFlags
	cf      convergeFlags
	sy      syncFlags
	dryRun  bool
	timeout time.Duration
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

Without --env and --path it syncs the one cluster root the repository declares, found as check
finds them (of roots that run on one cluster, the one that brings the others up); a
self-applying root Kustomization of another name (a Taskfile bootstrap's flux-system/cluster)
is the root unless --root or --namespace names one.

With --source-url the GitRepository is pointed at a temporary source (a mirror, for a cold
bring-up): it is annotated kustomize.toolkit.fluxcd.io/reconcile=disabled so the root does not
undo the override, and records the temporary URL, since when, and the URL git declares. A later
sync keeps a temporary source (and says so) until 'bootstrap cutover'.

With --serve this machine is the temporary source: a detached process serves the checkout's
commit (a clean tree at the ref git declares) over HTTPS with a CA and token made for the run
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
	fl.Var(input.NewNamespace(&c.env.Namespace, DefaultFluxNamespace), "namespace", "namespace of the root Kustomization")
	fl.Var(input.NewName(&c.env.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	fl.BoolVar(&c.dryRun, "dry-run", false, "print the plan (server-side dry run) and change nothing")
	fl.Var(input.NewDuration(&c.timeout, 5*time.Minute), "timeout", "how long each wait may take: the source, the root, the converge walk, the cutover's waits (must be positive)")
	c.sy.add(fl)
	return cmd
}

// run reads every input before the first request (options, then
// flow.Assemble: the environment built, the served snapshot prepared),
// then runs static, sync, converge and (with --cutover-when-ready)
// cutover.
func (c *syncCmd) run(a *app, cmd *cobra.Command) error {
	ctx := cmd.Context()
	run := a.s.NewRun("sync", c.dryRun)
	run.OnPlan = func(plan []verify.ObjectChange) { a.writePlan(plan, c.dryRun) }
	o, err := c.options(a, cmd.Flags())
	if c.sy.found != "" {
		run.Report.Facts["root"] = c.sy.found
	}
	var plan *flow.Plan
	if err == nil {
		plan, err = flow.Assemble(ctx, o, run.Report)
	}
	defer plan.Close()
	if err != nil {
		return a.s.Fail(ctx, run.Report, err)
	}
	a.releaseLine(plan.Release)
	a.s.Writes("sync", c.env.Namespace, c.dryRun)
	return a.s.Execute(ctx, run, plan.Phases...)
}

// options resolves the flags into the run's phases.
func (c *syncCmd) options(a *app, fl *pflag.FlagSet) (flow.Options, error) {
	env := c.env
	if err := errors.Join(c.sy.validate(fl, env), c.cf.validate(fl)); err != nil {
		return flow.Options{}, err
	}
	env.Repo = c.rf.repo
	var err error
	if env.Sync, err = c.sy.declared(); err != nil {
		return flow.Options{}, err
	}
	env.FluxInstance = c.sy.fluxInstance
	if err := c.sy.environment(fl, c.rf, &env); err != nil {
		return flow.Options{}, err
	}
	return flow.Options{Env: env, Static: c.sy.staticOptions(), Sync: c.sy.sync(a.getenv, a.streams.In), Converge: c.cf.options(),
		DryRun: c.dryRun, Timeout: c.timeout, Cluster: a.opener()}, nil
}
