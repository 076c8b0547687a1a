package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/pkg/check"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/pipeline"
)

func newCheckCommand(rf *reportFlags) *cobra.Command {
	var (
		o     check.Options
		env   string
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
			report := gate.NewReport("check")
			switch {
			case env != "" && o.Path != "":
				return fail(rf, report, gate.InputErrorf("--env and --path are exclusive: --env NAME means --path clusters/NAME"))
			case env != "":
				o.Path = "clusters/" + env
			case o.Path == "":
				return fail(rf, report, gate.InputErrorf("which environment? pass --env NAME (clusters/NAME) or --path"))
			}
			report.Facts["path"] = o.Path
			phase := &check.Phase{Options: o}
			run := &pipeline.Run{Report: report, Progress: func(line string) {
				if rf.output == "text" {
					fmt.Fprintln(os.Stderr, "  "+line)
				}
			}}
			if err := pipeline.Execute(cmd.Context(), run, phase); err != nil {
				return fail(rf, report, err)
			}
			if sarif != "" && phase.Result != nil {
				if err := writeFile(sarif, func(f *os.File) error { return check.WriteSARIF(f, phase.Result) }); err != nil {
					return fail(rf, report, gate.InputErrorf("--sarif: %w", err))
				}
			}
			return finish(rf, report)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Repo, "repo", ".", "the GitOps repository's root directory")
	fl.StringVar(&env, "env", "", "environment: checks clusters/NAME")
	fl.StringVar(&o.Path, "path", "", "the environment's root directory inside --repo (instead of --env)")
	fl.StringVar(&o.Namespace, "namespace", "flux-system", "namespace of the root Kustomization")
	fl.StringVar(&o.RootName, "root", "flux-system", "name of the root Kustomization")
	fl.StringSliceVar(&o.Compare, "compare", nil, "root directories of the environments whose substituteFrom knobs must match (default: every sibling of the path that has its own root)")
	fl.BoolVar(&o.NoCompare, "no-compare", false, "do not compare knobs with other environments")
	fl.StringVar(&sarif, "sarif", "", "also write the findings as SARIF 2.1.0 to this file")
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
