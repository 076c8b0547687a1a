package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
)

func newCheckCommand(a *app) *cobra.Command {
	var (
		o     check.Options
		rf    repoFlags
		sarif string
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an environment of the GitOps repository offline: substitution, knobs, graph, prune hazards",
		Long: `Builds the environment's root (clusters/<env>) and every Flux Kustomization it declares,
transitively, exactly as kustomize-controller builds them, and runs the controller's own
post-build substitution (strict) on every object against the ConfigMaps and Secrets the
environment renders. No cluster is needed. Reports undefined variables, default-operator
expansions, expansions the parser rejects, literals that ship unsubstituted, substituteFrom
knobs that differ between environments or are unused, dependsOn cycles and dangling edges,
unreachable nodes, a root with wait: true, the substitution race, and prune hazards.

Exit codes: 0 no defect (warnings allowed), 1 a defect, 2 input error (the repository does not
build), 3 incomplete (something could not be checked, e.g. a path with a remote base).`,
		Example: `  bootstrap check --repo . --env dev
  bootstrap check --env prod --compare clusters/dev -o json
  bootstrap check --path clusters/staging --sarif check.sarif --junit check.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := a.newRun("check", false)
			var err error
			o.Repo = rf.repo
			if o.Path, err = rf.resolve(); err != nil {
				return a.fail(cmd.Context(), run.Report, err)
			}
			run.Report.Facts["path"] = o.Path
			phase := &check.Phase{Options: o}
			if err := pipeline.Execute(cmd.Context(), run, phase); err != nil {
				return a.fail(cmd.Context(), run.Report, err)
			}
			if sarif != "" && phase.Result != nil {
				if err := writeFile(sarif, func(f *os.File) error { return check.WriteSARIF(f, phase.Result) }); err != nil {
					return a.fail(cmd.Context(), run.Report, gate.InputErrorf("--sarif: %w", err))
				}
			}
			return a.finish(run.Report)
		},
	}
	fl := cmd.Flags()
	rf.add(fl)
	fl.Var(input.NewNamespace(&o.Namespace, DefaultFluxNamespace), "namespace", "namespace of the root Kustomization")
	fl.Var(input.NewName(&o.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	addCompareFlags(fl, &o.Compare, &o.NoCompare, "")
	fl.Var(input.NewOutputFile(&sarif), "sarif", "also write the findings as SARIF 2.1.0 to this file")
	return cmd
}

func writeFile(path string, w func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = w(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// addCompareFlags are phase static's own flags, defined once: on check,
// and with the prefix "static: " on sync and up, which run the phase first.
func addCompareFlags(fl *pflag.FlagSet, compare *[]string, none *bool, prefix string) {
	fl.Var(input.NewRepoPaths(compare), "compare", prefix+"root directories of the environments whose substituteFrom knobs must match (default: every sibling of the path that has its own root)")
	fl.BoolVar(none, "no-compare", false, prefix+"do not compare knobs with other environments")
}
