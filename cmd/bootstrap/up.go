package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// upFlags are up's flags: one struct for the command.
type upFlags struct {
	f                     renderFlags
	rf                    repoFlags
	co                    controllers.Options
	cf                    convergeFlags
	sy                    syncFlags
	keyFile, secretName   string
	root, config          string
	rotate, force, dryRun bool
	timeout               time.Duration
}

func newUpCommand(a *app) *cobra.Command {
	u := &upFlags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "The whole bring-up in one run: controllers, age key, cluster root, each gated before and after",
		Long: `up runs the phases in order — static (bootstrap check of the environment, offline),
inputs (when the root substitutes: every object it substitutes from is seeded from the
repository, given with --supply FILE, or in the cluster, else nothing is written),
controllers (render, overlays, apply, proven live), age-key (when
a key is given: proven on the environment's SOPS files, then installed), sync (the environment's
cluster root, optionally from a temporary source: --source-url, or --serve for this machine),
converge, and with --cutover-when-ready the cutover to the source git declares — with gates
before and after each. It stops at
the first phase that does not pass and lists every gate it did not run as skip, with the reason.
One report: per-phase results and timings, an aggregated changed, verdict and exit code.

Without --env and --path, up brings up the one cluster root the repository declares, found as
check finds them (of roots that run on one cluster, the one that brings the others up); a
self-applying root Kustomization of another name (a Taskfile bootstrap's flux-system/cluster)
is the root unless --root or --namespace names one. A substitution race that only a later
commit can hit, on an object the inputs phase seeds before the root, is a warning of phase
static here (bootstrap check fails it).

--force proceeds past the before-gates that refuse by default in every phase that has one, each
then reported as warn: controllers.ownership, and age-key.scope, .recipient and .decrypt.

Every flag can also come from --config FILE (YAML, the same names as the flags); flags win.
The age key is never a flag value: --age-key-file FILE or - (stdin), $SOPS_AGE_KEY or
$SOPS_AGE_KEY_FILE.`,
		Example: `  bootstrap up --repo /srv/gitops --env dev --age-key-file - < age.key
  bootstrap up --repo ~/home-ops --age-key-file ~/.config/sops/age/keys.txt   # the one cluster root it declares
  bootstrap up --config bootstrap.yaml -o json
  bootstrap up --env prod --source-url https://mirror.lan/homelab/gitops.git --dry-run
  bootstrap up --env prod --age-key-file - --serve --cutover-when-ready < age.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return u.run(a, cmd) },
	}
	u.add(cmd, a)
	return cmd
}

func (u *upFlags) add(cmd *cobra.Command, a *app) {
	addRenderFlags(cmd, &u.f, a.pins)
	releaseFromRepository(cmd, a.pins, "install and judge the environment by")
	fl := cmd.Flags()
	u.rf.add(fl)
	u.cf.add(fl)
	fl.StringVar(&u.config, "config", "", "YAML file of flag values (the same names as the flags; flags on the command line win)")
	fl.BoolVar(&u.dryRun, "dry-run", false, "plan every phase and change nothing")
	fl.Var(input.NewName(&u.root, "", "root Kustomization"), "root", "name of the root Kustomization (default: the --namespace, as flux bootstrap names it)")
	fl.Var(input.NewDuration(&u.timeout, 5*time.Minute), "timeout", "how long each wait of each phase may take: CRDs, rollouts, the source, the root, the converge walk, the cutover's waits")
	fl.BoolVar(&u.force, "force", false, forceUsage+forceControllers+"; "+forceAgeKey)
	fl.BoolVar(&u.co.MigrateCRDs, "migrate-crds", false, "migrate objects off CRD versions the new render drops")
	fl.BoolVar(&u.co.PruneCRDs, "prune-crds", false, "also prune CRDs that still have custom resources")
	fl.StringVar(&u.keyFile, "age-key-file", "", "age identity file, or - for stdin (default: $SOPS_AGE_KEY, then $SOPS_AGE_KEY_FILE); without any, the age-key phase is not run")
	fl.Var(input.NewName(&u.secretName, agekey.DefaultSecretName, "age key Secret"), "secret-name", "name of the age-key Secret")
	fl.BoolVar(&u.rotate, "rotate", false, "replace an age-key Secret that holds different identities")
	u.sy.add(fl)
}

// run reads every input before the first request (options, then
// flow.Assemble), then runs the phases under the cluster lock.
func (u *upFlags) run(a *app, cmd *cobra.Command) error {
	ctx := cmd.Context()
	run := a.s.NewRun("up", u.dryRun)
	o, err := u.options(a, cmd)
	if u.sy.found != "" {
		run.Report.Facts["root"] = u.sy.found
	}
	var plan *flow.Plan
	if err == nil {
		plan, err = flow.Assemble(ctx, o, run.Report)
	}
	defer plan.Close()
	if err != nil {
		return a.s.Fail(ctx, run.Report, err)
	}
	if o.AgeKey == nil {
		run.Report.Facts["age-key"] = "no key given: phase not run; sync checks that every decryption Secret exists"
	}
	a.releaseLine(plan.Release)
	a.s.CountRequests()
	a.s.Installs("up", o.Env.Namespace, u.dryRun)
	run.OnPlan = func(plan []verify.ObjectChange) { a.writePlan(plan, u.dryRun) }
	return a.s.Execute(ctx, run, plan.Phases...)
}

// options reads the config and resolves the flags into the run's phases:
// static, controllers, age-key (with a key), sync, converge, cutover
// (--cutover-when-ready).
func (u *upFlags) options(a *app, cmd *cobra.Command) (flow.Options, error) {
	// --config was read with the environment, before the command ran.
	fl := cmd.Flags()
	ro, err := u.f.options()
	if err != nil {
		return flow.Options{}, err
	}
	ns := ro.Components.Namespace
	co := u.co
	co.Render, co.MinKubernetes = ro, a.pins.MinKubernetes[ro.Components.FluxVersion]
	env := rootsync.Options{Repo: u.rf.repo, Namespace: ns, RootName: u.root}
	if env.RootName == "" {
		env.RootName = ns
	}
	if u.rf.env != "" && u.rf.path != "" {
		_, err := u.rf.resolve()
		return flow.Options{}, err
	}
	if err := errors.Join(u.sy.validate(fl, env), u.cf.validate(fl)); err != nil {
		return flow.Options{}, err
	}
	env.Sync, _ = u.sy.declared() // validated
	env.FluxInstance = u.sy.fluxInstance
	if err := u.sy.environment(fl, u.rf, &env); err != nil {
		return flow.Options{}, err
	}
	o := flow.Options{Env: env, Static: u.sy.staticOptions(), Controllers: &co, Sync: u.sy.sync(a.getenv, a.streams.In), Converge: u.cf.options(),
		DryRun: u.dryRun, Timeout: u.timeout, Force: u.force, Cluster: a.opener(), Release: a.releaseChoice(fl)}
	hasKey := u.keyFile != "" || a.getenv("SOPS_AGE_KEY") != "" || a.getenv("SOPS_AGE_KEY_FILE") != ""
	if !hasKey && (input.Given(fl, "rotate") || input.Given(fl, "secret-name")) {
		return flow.Options{}, verify.InputErrorf("--rotate and --secret-name are phase age-key's and need a key: add --age-key-file FILE (or -), or set $SOPS_AGE_KEY or $SOPS_AGE_KEY_FILE")
	}
	if u.keyFile == "-" && u.sy.suppliesStdin() {
		return flow.Options{}, verify.InputErrorf("--supply - and --age-key-file - both read stdin, which is read once: give the age key in a file (--age-key-file FILE, $SOPS_AGE_KEY_FILE) or the supplied objects in one (--supply FILE)")
	}
	if hasKey {
		o.AgeKey = &flow.AgeKey{Input: agekey.Input{Flag: u.keyFile, Stdin: a.streams.In, Getenv: a.getenv}, SecretName: u.secretName, Rotate: u.rotate}
	}
	return o, nil
}
