package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/flagvalue"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/validate"
)

// maxConfig bounds the --config file.
const maxConfig = 1 << 20

// upFlags are up's flags: one struct for the command.
type upFlags struct {
	f               renderFlags
	rf              repoFlags
	co              controllers.Options
	ao              agekey.Options
	cf              convergeFlags
	sy              syncFlags
	so              rootsync.RunOptions
	keyFile, config string
	dryRun          bool
	timeout         time.Duration
}

func newUpCommand(a *app) *cobra.Command {
	u := &upFlags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "The whole bring-up in one run: controllers, age key, cluster root, each gated before and after",
		Long: `up runs the phases in order — static (bootstrap check of the environment, offline),
controllers (render, overlays, apply, proven live), age-key (when
a key is given: proven on the environment's SOPS files, then installed), sync (the environment's
cluster root, optionally from a temporary source: --source-url, or --serve for this machine),
converge, and with --cutover-when-ready the cutover to the source git declares — with gates
before and after each. It stops at
the first phase that does not pass and lists every gate it did not run as skip, with the reason.
One report: per-phase results and timings, an aggregated changed, verdict and exit code.

Every flag can also come from --config FILE (YAML, the same names as the flags); flags win.
The age key is never a flag value: --age-key-file FILE or - (stdin), $SOPS_AGE_KEY or
$SOPS_AGE_KEY_FILE.`,
		Example: `  bootstrap up --repo /srv/gitops --env dev --age-key-file - < age.key
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
	fl := cmd.Flags()
	u.rf.add(fl)
	u.cf.add(fl)
	fl.StringVar(&u.config, "config", "", "YAML file of flag values (the same names as the flags; flags on the command line win)")
	fl.BoolVar(&u.dryRun, "dry-run", false, "plan every phase and change nothing")
	fl.Var(flagvalue.NewDuration(&u.timeout, 5*time.Minute), "timeout", "how long each phase may wait (CRDs, rollouts, the source, the root)")
	fl.BoolVar(&u.co.Force, "force", false, "apply the controllers even over a Flux managed by a Flux Kustomization or the Flux operator")
	fl.BoolVar(&u.co.MigrateCRDs, "migrate-crds", false, "migrate objects off CRD versions the new render drops")
	fl.BoolVar(&u.co.PruneCRDs, "prune-crds", false, "also prune CRDs that still have custom resources")
	fl.StringVar(&u.keyFile, "age-key-file", "", "age identity file, or - for stdin (default: $SOPS_AGE_KEY, then $SOPS_AGE_KEY_FILE); without any, the age-key phase is not run")
	fl.StringVar(&u.ao.SecretName, "secret-name", agekey.DefaultSecretName, "name of the age-key Secret")
	fl.BoolVar(&u.ao.Rotate, "rotate", false, "replace an age-key Secret that holds different identities")
	u.sy.add(fl)
}

// run refuses bad input before the first request (phases), then runs the
// phases under the cluster lock.
func (u *upFlags) run(a *app, cmd *cobra.Command) error {
	run := a.newRun("up", u.dryRun)
	phases, err := u.phases(a, cmd, run)
	if u.so.Serve != nil {
		defer u.so.Serve.Close()
	}
	if err != nil {
		return a.fail(cmd.Context(), run.Report, err)
	}
	a.countRequests = true
	a.installs("up", u.co.Render.Components.Namespace, u.dryRun)
	run.OnPlan = func(plan []gate.ObjectChange) { a.writePlan(plan, u.dryRun) }
	return a.execute(cmd.Context(), run, phases...)
}

// phases reads every input — the config, the render options, the
// environment (built: a root that does not build is refused before the
// cluster is touched), the age key, the served snapshot — and returns the
// phase list: static, controllers, age-key (with a key), sync, converge,
// cutover (--cutover-when-ready).
func (u *upFlags) phases(a *app, cmd *cobra.Command, run *pipeline.Run) ([]pipeline.Phase, error) {
	if err := loadConfig(cmd.Flags(), u.config); err != nil {
		return nil, err
	}
	var err error
	if u.co.Render, err = u.f.options(); err != nil {
		return nil, err
	}
	ns := u.co.Render.Components.Namespace
	u.co.MinKubernetes = a.pins.MinKubernetes[u.co.Render.Components.FluxVersion]
	u.co.Timeout, u.so.Timeout = u.timeout, u.timeout
	if u.so.Build.Path, err = u.rf.resolve(); err != nil {
		return nil, err
	}
	u.so.Build.Repo, u.so.Build.Namespace, u.so.Build.RootName = u.rf.repo, ns, ns
	if err := errors.Join(u.sy.validate(u.so), validate.OptionalName("--secret-name", u.ao.SecretName, "age-key Secret")); err != nil {
		return nil, err
	}
	u.so.Source = u.sy.source()
	if u.so.Built, err = rootsync.Build(u.so.Build); err != nil {
		return nil, err
	}
	phases := append(staticPhase(run, u.sy.withCheck, u.so.Built), controllers.NewPhase(u.co, a.connect))
	in := agekey.Input{Flag: u.keyFile, Stdin: a.streams.In, Getenv: a.getenv}
	if u.keyFile != "" || a.getenv("SOPS_AGE_KEY") != "" || a.getenv("SOPS_AGE_KEY_FILE") != "" {
		// Read before the first request: a missing or malformed key is
		// refused before the controllers change.
		if in.Identities, err = agekey.Read(in); err != nil {
			return nil, err
		}
		u.ao.Repo, u.ao.Path, u.ao.Namespace, u.ao.Env = u.rf.repo, u.so.Build.Path, ns, u.so.Built.Env
		phases = append(phases, agekey.NewInstallPhase(in, u.ao, a.ageKeyConnect))
	} else {
		run.Report.Facts["age-key"] = "no key given: phase not run; sync checks that every decryption Secret exists"
	}
	conv, err := u.cf.phase(a, u.so.Built, u.so.Build.Path, u.timeout)
	if err != nil {
		return nil, err
	}
	if u.so.Serve, err = u.sy.serve.prepare(cmd.Context(), a, u.rf.repo, u.so.Built, u.dryRun); err != nil {
		return nil, err
	}
	phases = append(phases, rootsync.NewPhase(u.so, a.connect))
	return append(append(phases, conv...), u.sy.serve.phase(a, u.so.Built, u.timeout, u.so.Serve)...), nil
}

// loadConfig sets every flag the command line did not set from a YAML map
// of flag names to values. An unknown name is an input error.
func loadConfig(fl *pflag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return gate.InputErrorf("--config %s: %w", path, err)
	case !st.Mode().IsRegular():
		return gate.InputErrorf("--config %s: not a regular file", path)
	case st.Size() > maxConfig:
		return gate.InputErrorf("--config %s: %d bytes, more than the %d a config file may have", path, st.Size(), maxConfig)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return gate.InputErrorf("--config %s: %w", path, err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return gate.InputErrorf("--config %s: not a YAML map of flag names to values: %v", path, err)
	}
	for name, v := range m {
		if name == "config" {
			return gate.InputErrorf("--config %s: %q cannot be set from a config file", path, name)
		}
		flag := fl.Lookup(name)
		if flag == nil {
			return gate.InputErrorf("--config %s: unknown flag %q (the keys are the flag names, e.g. env, flux-version, components-extra)", path, name)
		}
		if flag.Changed {
			continue // the command line wins
		}
		val := fmt.Sprint(v)
		if list, ok := v.([]any); ok {
			parts := make([]string, len(list))
			for i, x := range list {
				parts[i] = fmt.Sprint(x)
			}
			val = strings.Join(parts, ",")
		}
		if err := fl.Set(name, val); err != nil {
			return gate.InputErrorf("--config %s: %s: %v", path, name, err)
		}
	}
	return nil
}
