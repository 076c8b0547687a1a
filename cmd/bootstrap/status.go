package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/status"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// statusFlags are status's own flags (the render flags come from
// addRenderFlags).
type statusFlags struct {
	repo, env, path string
	root            string
	secretName      string
	// declared declares the root when the repository holds none (as
	// check's flags do).
	declared rootFlags
	// watch evaluates again on every change (--watch).
	watch bool
}

func newStatusCommand(a *app) *cobra.Command {
	f := &renderFlags{}
	var sf statusFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Read-only: every phase's after-gates against the live cluster, one verdict and exit code",
		Long: `status runs, read only, the after-gates of every phase against the live cluster and exits
0 when the cluster is what a bring-up left, 1 when a gate fails, 3 when something could not be
checked. It takes no lock and writes nothing: every request it sends is a GET (get, list, watch),
and its transport refuses any other (the status.read-only gate reports the requests made).

  controllers  the render for the Flux version and overlays (with --repo/--env: the release the
               repository declares, as check resolves it; without them and without
               --flux-version: the version and components the live Deployments run) against the
               cluster: every object present, the drift named as the plan would name it
               (controllers.drift), the live effective flags and images (controllers.flags-live),
               the rollouts finished (controllers.rollout)
  age-key      with --repo/--env: the installed Secret parses and decrypts every SOPS file the
               environment decrypts with it (age-key.decrypt/<file>)
  sync         the root's GitRepository: on its declared URL, not left on a temporary source
               (sync.temporary-source), Ready with an artifact (sync.source-ready); with
               --repo/--env every decryption Secret exists
  converge     every Kustomization (the repository's graph with --repo/--env, else the live one)
               classified as converge classifies it: converged at its source's revision passes;
               failing, stalled, suspended or missing fails; blocked (naming the root cause),
               progressing or stale warns. No nudge, no wait.

With --watch it evaluates again after every change it sees through watches, printing a fresh
report each time (-o json: one document per evaluation), until interrupted.`,
		Example: `  bootstrap status
  bootstrap status --repo /srv/gitops --env prod -o json
  bootstrap status --env dev -q --junit /var/log/bootstrap/status.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sf.watch {
				return a.watchStatus(cmd, f, sf)
			}
			run := a.s.NewRun("status", false)
			run.KeepGoing = true
			phases, err := a.statusPhases(cmd, f, sf, run.Report)
			if err != nil {
				return a.s.Fail(cmd.Context(), run.Report, err)
			}
			return a.s.Execute(cmd.Context(), run, phases...)
		},
	}
	addRenderFlags(cmd, f, a.pins)
	releaseFromRepository(cmd, a.pins, "compare the controllers with (without --repo/--env/--path: default the version the live Deployments run)")
	fl := cmd.Flags()
	fl.StringVar(&sf.repo, "repo", "", "the GitOps repository's root directory (with --env or --path; default . then)")
	fl.Var(input.NewEnv(&sf.env), "env", "environment: clusters/NAME in --repo (its graph, its SOPS files, its declared source)")
	fl.Var(input.NewRepoPath(&sf.path), "path", "the environment's directory inside --repo (instead of --env)")
	fl.Var(input.NewRef(&sf.root, "flux-system/flux-system"), "root", "the root Kustomization, NAME or NAMESPACE/NAME")
	fl.Var(input.NewName(&sf.secretName, agekey.DefaultSecretName, "age key Secret"), "secret-name", "name of the age key Secret (with --repo/--env)")
	sf.declared.add(fl)
	fl.BoolVarP(&sf.watch, "watch", "w", false, "evaluate again on every change (watches on Flux's Deployments, ReplicaSets, pods, Kustomizations, sources and the age-key Secret; no polling) until interrupted; exits with the last evaluation's code")
	return cmd
}

// statusPhases builds the read-only phases: controllers, age-key (with an
// environment), sync, converge, and the read-only proof.
func (a *app) statusPhases(cmd *cobra.Command, f *renderFlags, sf statusFlags, r *verify.Report) ([]pipeline.Phase, error) {
	ro, err := f.options()
	if err != nil {
		return nil, err
	}
	ns := ro.Components.Namespace
	co := converge.DefaultOptions()
	co.Namespace = ns
	fl := cmd.Flags()
	// Without --root the root is named after --namespace, as flux
	// bootstrap names it; a --root given is kept, whatever it says.
	if !fl.Changed("root") {
		sf.root = ns + "/" + ns
	}
	// --root only: the repository is built here, once, for every phase.
	if err := convergeOptions(&co, sf.root, "", "", ""); err != nil {
		return nil, err
	}
	r.Facts["root"] = co.Root.Namespace + "/" + co.Root.Name
	repo, path, err := optionalEnv(sf.repo, sf.env, sf.path, "status checks what the cluster alone can tell")
	if err != nil {
		return nil, err
	}
	live := path == ""
	render, err := statusRender(fl, sf, repo, path, co.Root, &ro)
	if err != nil {
		return nil, err
	}
	if render != nil {
		// The release the environment declares, as check judges it.
		rel, warn, err := flow.JudgeRelease(render.Env, &ro, a.releaseChoice(fl))
		if err != nil {
			return nil, err
		}
		r.Facts[flow.ReleaseFact] = rel.String()
		if warn != "" {
			r.Warn(warn)
		}
	}
	rec := kube.NewRequests()
	connect := a.s.ReadOnlyConnect(rec)
	return flow.Status(flow.StatusOptions{
		Controllers: controllers.StatusOptions{Render: ro,
			LiveVersion:    live && !fl.Changed("flux-version") && ro.Manifests == "",
			LiveComponents: !fl.Changed("components") && !fl.Changed("components-extra"),
		},
		Converge: co,
		Env:      render,
		AgeKey:   agekey.Options{Repo: repo, Path: path, Namespace: ns, SecretName: sf.secretName, IfNeeded: true},
		Connect:  connect, AgeKeyConnect: readOnlyAgeKey(connect), Requests: rec,
	}), nil
}

// statusRender is the environment's render (nil for the cluster alone,
// path ""), its root named root; the live controllers are then compared
// with the customization the repository keeps, when it keeps one.
func statusRender(fl *pflag.FlagSet, sf statusFlags, repo, path string, root converge.NodeID, ro *customize.Options) (*rootsync.Render, error) {
	live := path == ""
	if live && input.Given(fl, "secret-name") {
		return nil, verify.InputErrorf("--secret-name needs --env or --path: the age-key Secret is checked against the environment's SOPS files")
	}
	declared, err := sf.declared.sync()
	if err != nil {
		return nil, err
	}
	if live && (declared != nil || sf.declared.fluxInstance != "") {
		return nil, verify.InputErrorf("--source-url and --flux-instance declare the root of an environment: add --env or --path")
	}
	if live {
		return nil, nil
	}
	r, err := rootsync.Build(rootsync.Options{Repo: repo, Path: path, Namespace: root.Namespace, RootName: root.Name, Sync: declared, FluxInstance: sf.declared.fluxInstance})
	if err != nil {
		return nil, err
	}
	return r, ro.UseRepository(r.Env)
}

// readOnlyAgeKey is connect as the age-key phases take it, with no
// resource manager: status writes nothing.
func readOnlyAgeKey(connect func() (*apply.Cluster, error)) agekey.Connect {
	return func() (client.Client, *ssa.ResourceManager, error) {
		cl, err := connect()
		if err != nil {
			return nil, nil, err
		}
		return cl.Client, nil, nil
	}
}

// watchStatus is status --watch (status.Loop): input errors stop before
// anything is watched; each evaluation is a plain status run of its own,
// its report printed; the last one's exit code is the command's.
func (a *app) watchStatus(cmd *cobra.Command, f *renderFlags, sf statusFlags) error {
	ctx := cmd.Context()
	if _, err := a.statusPhases(cmd, f, sf, verify.NewReport("status")); err != nil {
		return a.s.Fail(ctx, a.s.NewRun("status", false).Report, err)
	}
	cl, err := a.s.ReadOnlyConnect(kube.NewRequests())()
	if err != nil {
		return a.s.Fail(ctx, a.s.NewRun("status", false).Report, err)
	}
	wo := status.WatchOptions{Namespace: f.components.Namespace}
	if sf.env != "" || sf.path != "" {
		wo.Secret = sf.secretName
	}
	return status.Loop(ctx, status.LoopOptions{
		Client: cl.Client,
		Reachable: func() bool {
			reach, _ := cl.Reachable(controllers.GateReachable)
			return reach.Verdict == verify.Pass
		},
		Watch:    wo,
		Evaluate: func(n int, cause string) error { return a.statusEval(cmd, f, sf, n, cause) },
		Fail:     func(err error) error { return a.s.Fail(ctx, a.s.NewRun("status", false).Report, err) },
	})
}

// statusEval is one evaluation of status --watch: the n-th, cause the
// change that triggered it.
func (a *app) statusEval(cmd *cobra.Command, f *renderFlags, sf statusFlags, n int, cause string) error {
	ctx := cmd.Context()
	run := a.s.NewRun("status", false)
	run.KeepGoing = true
	run.Report.Facts["watch.evaluation"] = strconv.Itoa(n)
	if cause != "" {
		run.Report.Facts["watch.change"] = cause
	}
	if a.s.Output.Format == "text" {
		why := "start"
		if cause != "" {
			why = "after a change to " + cause
		}
		fmt.Fprintf(a.streams.ErrOut, "\n=== status #%d at %s (%s) ===\n", n, time.Now().Format(time.TimeOnly), why)
	}
	phases, err := a.statusPhases(cmd, f, sf, run.Report)
	if err != nil {
		return a.s.Fail(ctx, run.Report, err)
	}
	return a.s.Execute(ctx, run, phases...)
}
