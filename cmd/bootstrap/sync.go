package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/pkg/apply"
	"github.com/homelab-ops/bootstrap/pkg/gate"
	"github.com/homelab-ops/bootstrap/pkg/kube"
	"github.com/homelab-ops/bootstrap/pkg/rootsync"
)

func newSyncCommand(rf *reportFlags) *cobra.Command {
	var (
		o                            rootsync.Options
		env                          string
		dryRun                       bool
		timeout                      time.Duration
		srcURL, srcBranch, srcSecret string
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
sync keeps a temporary source (and says so) until 'bootstrap cutover'.`,
		Example: `  bootstrap sync --repo . --env dev
  bootstrap sync --env prod --dry-run
  bootstrap sync --env prod --source-url https://mirror.lan/homelab/gitops.git --source-secret mirror-auth
  bootstrap sync --env dev -o json --report-json /var/log/bootstrap/sync.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report := gate.NewReport("sync")
			report.DryRun = dryRun
			switch {
			case env != "" && o.Path != "":
				return fail(rf, report, gate.InputErrorf("--env and --path are exclusive: --env NAME means --path clusters/NAME"))
			case env != "":
				o.Path = "clusters/" + env
			case o.Path == "":
				return fail(rf, report, gate.InputErrorf("which environment? pass --env NAME (clusters/NAME) or --path"))
			}
			if srcURL == "" && (srcBranch != "" || srcSecret != "") {
				return fail(rf, report, gate.InputErrorf("--source-branch and --source-secret need --source-url"))
			}
			report.Facts["path"] = o.Path
			r, err := rootsync.Build(o)
			if err != nil {
				return fail(rf, report, err)
			}
			report.Add(rootsync.Static(r)...)
			if report.ExitCode() != gate.ExitOK {
				return finish(rf, report)
			}
			cfg, err := kube.Config(rf.kube)
			if err != nil {
				return fail(rf, report, gate.InputErrorf("%w", err))
			}
			cl, err := apply.Connect(cfg)
			if err != nil {
				return fail(rf, report, err)
			}
			ro := rootsync.RunOptions{DryRun: dryRun, Timeout: timeout, Progress: func(line string) {
				if rf.output == "text" {
					fmt.Fprintln(os.Stderr, "  "+line)
				}
			}}
			if srcURL != "" {
				ro.Source = &rootsync.Temporary{URL: srcURL, Branch: srcBranch, Secret: srcSecret}
			}
			err = rootsync.Run(cmd.Context(), cl, r, ro, report)
			if report.Objects != nil && rf.output == "text" {
				writePlan(os.Stderr, report.Objects, dryRun)
			}
			if err != nil {
				return fail(rf, report, err)
			}
			return finish(rf, report)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Repo, "repo", ".", "the GitOps repository's root directory")
	fl.StringVar(&env, "env", "", "environment: builds clusters/NAME")
	fl.StringVar(&o.Path, "path", "", "the cluster root inside --repo (instead of --env)")
	fl.StringVar(&o.Namespace, "namespace", "flux-system", "namespace of the root Kustomization")
	fl.StringVar(&o.RootName, "root", "flux-system", "name of the root Kustomization")
	fl.BoolVar(&dryRun, "dry-run", false, "print the plan (server-side dry run) and change nothing")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the source and the root")
	fl.StringVar(&srcURL, "source-url", "", "point the GitRepository at this temporary source (cold bring-up) until `bootstrap cutover`")
	fl.StringVar(&srcBranch, "source-branch", "", "branch of the temporary source (default: the declared ref)")
	fl.StringVar(&srcSecret, "source-secret", "", "Secret with the temporary source's credentials (default: none)")
	return cmd
}
