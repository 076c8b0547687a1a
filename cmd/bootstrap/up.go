package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/flagvalue"
	"github.com/homelab-ops/bootstrap/pkg/agekey"
	"github.com/homelab-ops/bootstrap/pkg/controllers"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/validate"
)

// maxConfig bounds the --config file.
const maxConfig = 1 << 20

func newUpCommand(a *app) *cobra.Command {
	var (
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
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.newRun("up", dryRun)
			if err := loadConfig(cmd.Flags(), config); err != nil {
				return a.fail(run.Report, err)
			}
			var err error
			if co.Render, err = f.options(); err != nil {
				return a.fail(run.Report, err)
			}
			ns := co.Render.Components.Namespace
			co.MinKubernetes = a.pins.MinKubernetes[co.Render.Components.FluxVersion]
			co.Timeout, so.Timeout = timeout, timeout
			if so.Build.Path, err = rf.resolve(); err != nil {
				return a.fail(run.Report, err)
			}
			so.Build.Repo, so.Build.Namespace, so.Build.RootName = rf.repo, ns, ns
			if err := sy.validate(so); err != nil {
				return a.fail(run.Report, err)
			}
			if err := validate.OptionalName("--secret-name", ao.SecretName, "age-key Secret"); err != nil {
				return a.fail(run.Report, err)
			}
			so.Source = sy.source()
			// The environment is built before the first request: a root
			// that does not build is refused before the cluster is touched
			// (the static phase then refuses any Kustomization below it that
			// does not build, unless --check=false).
			if so.Built, err = rootsync.Build(so.Build); err != nil {
				return a.fail(run.Report, err)
			}
			phases := append(staticPhase(run, sy.withCheck, so.Built), controllers.NewPhase(co, a.connect))
			in := agekey.Input{Flag: keyFile, Stdin: a.streams.In, Getenv: a.getenv}
			if keyFile != "" || a.getenv("SOPS_AGE_KEY") != "" || a.getenv("SOPS_AGE_KEY_FILE") != "" {
				// The key is read before the first request: a missing or
				// malformed key is refused before the controllers change.
				if in.Identities, err = agekey.Read(in); err != nil {
					return a.fail(run.Report, err)
				}
				ao.Repo, ao.Path, ao.Namespace, ao.Env = rf.repo, so.Build.Path, ns, so.Built.Env
				phases = append(phases, agekey.NewInstallPhase(in, ao, a.ageKeyConnect))
			} else {
				run.Report.Facts["age-key"] = "no key given: phase not run; sync checks that every decryption Secret exists"
			}
			conv, err := cf.phase(a, so.Built, so.Build.Path, timeout)
			if err != nil {
				return a.fail(run.Report, err)
			}
			if so.Serve, err = sy.serve.prepare(cmd.Context(), a, rf.repo, so.Built, dryRun); err != nil {
				return a.fail(run.Report, err)
			}
			if so.Serve != nil {
				defer so.Serve.Close()
			}
			phases = append(phases, rootsync.NewPhase(so, a.connect))
			phases = append(append(phases, conv...), sy.serve.phase(a, so.Built, timeout, so.Serve)...)
			a.countRequests = true
			a.installs("up", ns, dryRun)
			run.OnPlan = func(plan []gate.ObjectChange) { a.writePlan(plan, dryRun) }
			return a.execute(cmd.Context(), run, phases...)
		},
	}
	addRenderFlags(cmd, &f, a.pins)
	fl := cmd.Flags()
	rf.add(fl)
	cf.add(fl)
	fl.StringVar(&config, "config", "", "YAML file of flag values (the same names as the flags; flags on the command line win)")
	fl.BoolVar(&dryRun, "dry-run", false, "plan every phase and change nothing")
	fl.Var(flagvalue.NewDuration(&timeout, 5*time.Minute), "timeout", "how long each phase may wait (CRDs, rollouts, the source, the root)")
	fl.BoolVar(&co.Force, "force", false, "apply the controllers even over a Flux managed by a Flux Kustomization or the Flux operator")
	fl.BoolVar(&co.MigrateCRDs, "migrate-crds", false, "migrate objects off CRD versions the new render drops")
	fl.BoolVar(&co.PruneCRDs, "prune-crds", false, "also prune CRDs that still have custom resources")
	fl.StringVar(&keyFile, "age-key-file", "", "age identity file, or - for stdin (default: $SOPS_AGE_KEY, then $SOPS_AGE_KEY_FILE); without any, the age-key phase is not run")
	fl.StringVar(&ao.SecretName, "secret-name", agekey.DefaultSecretName, "name of the age-key Secret")
	fl.BoolVar(&ao.Rotate, "rotate", false, "replace an age-key Secret that holds different identities")
	sy.add(fl)
	return cmd
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
