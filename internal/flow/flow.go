// Package flow is the one registry of phases: every command that runs
// phases takes them from here. Assemble holds the sequence of up, sync and
// cutover, as flux2's pkg/bootstrap.Run holds the sequence of `flux
// bootstrap`: a command parses its flags into Options (which phases, with
// what); Assemble reads every input those phases need before the first
// request and returns them in the one order: static, controllers, age-key,
// sync, cutover, converge, and the cutover of --cutover-when-ready. Status
// is status's read-only phases; Every is one of each phase, whose gates
// are the reference (docgen). internal/pipeline runs them.
package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/client-go/rest"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options select the phases of a run and carry what they share. A nil
// phase field leaves that phase out.
type Options struct {
	// Env is the environment the run builds: the repository, the path in
	// it, the root Kustomization's namespace and name. Path "" builds none
	// (cutover); sync and age-key need one.
	Env rootsync.Options
	// Static runs phase static, the offline check of Env, first (--check);
	// nil leaves it out, with a warning in the report.
	Static *Static
	// Controllers installs the customized controllers (up). Its Force and
	// Timeout are this run's.
	Controllers *controllers.Options
	// AgeKey installs the SOPS age key (up, when a key is given).
	AgeKey *AgeKey
	// Sync applies Env's cluster root (up, sync).
	Sync *Sync
	// Cutover moves the cluster to its final source (cutover). Its
	// Timeout is this run's.
	Cutover *cutover.Options
	// Converge walks the dependsOn graph at the end: Env's when one is
	// built (Kustomizations not created yet are known), the live
	// cluster's otherwise. Its Timeout is this run's when that is set.
	Converge *converge.Options
	// DryRun plans every phase and changes nothing (--dry-run).
	DryRun bool
	// Timeout bounds each wait of every phase (--timeout): the CRDs and
	// rollouts, the source and the root, each of the cutover's waits, the
	// converge walk.
	Timeout time.Duration
	// Force proceeds past the before-gates that refuse by default, each
	// then reported as warn (--force), in every phase the run has:
	// controllers.ownership (a Flux managed by a Flux Kustomization or the
	// Flux operator) and age-key.scope, age-key.recipient and
	// age-key.decrypt (a key that decrypts none, or not all, of the
	// environment's SOPS files).
	Force bool
	// Cluster opens the cluster when a phase first needs it.
	Cluster Cluster
	// Release is the Flux release chosen on the command line, if one was;
	// without one the run takes the release Env declares, as check does
	// (InstallRelease): the same for the render, the static phase and the
	// gates.
	Release Choice
}

// Static is phase static's own options.
type Static struct {
	// Compare are the environments whose knobs must match (--compare);
	// nil: every sibling with a root of its own.
	Compare []string
	// NoCompare compares with no other environment (--no-compare).
	NoCompare bool
}

// AgeKey is the age-key phase's input.
type AgeKey struct {
	// Input says where the identity comes from; Assemble reads it, so a
	// missing or malformed key is refused before the controllers change.
	Input agekey.Input
	// SecretName names the Secret the Kustomizations decrypt with.
	SecretName string
	// Rotate replaces a Secret that holds different identities.
	Rotate bool
}

// Sync is the sync phase's own options and what follows it.
type Sync struct {
	// Source is the temporary source --source-url names (nil: none).
	Source *rootsync.Temporary
	// Serve makes this machine the temporary source (--serve; nil: not).
	Serve *Serve
	// CutoverWhenReady ends the run, after converge, with the cutover to
	// the source git declares once the cluster reaches it at the temporary
	// source's revision, waiting up to CutoverWait for that.
	CutoverWhenReady bool
	CutoverWait      time.Duration
	// Supply are the --supply inputs (files, or "-" for Stdin): Secrets
	// and ConfigMaps the repository does not hold, applied before the
	// root. Assemble reads and validates them.
	Supply []string
	Stdin  io.Reader
}

// Serve is --serve's: where to listen and for how long, and where the
// serving state and process come from. Assemble takes the rest from Env
// and the cluster, makes the snapshot and binds the address.
type Serve struct {
	// Addr, URL and For are --serve ("" picks the address this machine
	// reaches the API server from), --serve-url and --serve-for.
	Addr, URL string
	For       time.Duration
	// Getenv locates the serving state (serve.DefaultDirs).
	Getenv func(string) string
	// RunArgs make this program the serving process ("serve", "run"); the
	// state directory is appended.
	RunArgs []string
}

// Cluster opens the cluster lazily, when a phase first needs it.
type Cluster struct {
	// Connect opens it for the controllers, sync, cutover and converge
	// phases.
	Connect func() (*apply.Cluster, error)
	// AgeKey opens it for the age-key phase.
	AgeKey agekey.Connect
	// Config is the kubeconfig's REST config: --serve keys its state by
	// the API server and hands the serving process the cluster.
	Config func() (*rest.Config, error)
}

// Plan is an assembled run.
type Plan struct {
	// Phases in the order they run.
	Phases []pipeline.Phase
	// Serve is what --serve prepared (nil without it): the snapshot and
	// the bound address.
	Serve *serve.Prepared
	// Release is the Flux release the run installs and judges by (nil:
	// neither the controllers nor an environment are in the run); its
	// Line is the plan's first line.
	Release *fluxrelease.Release
}

// Close releases what a run that did not start the server holds.
func (p *Plan) Close() {
	if p != nil && p.Serve != nil {
		p.Serve.Close()
	}
}

// Assemble reads every input the selected phases need, before the first
// request — Env built (a root that does not build is refused before the
// cluster is touched), the age key read, the snapshot --serve serves made
// and its address bound — and returns the phases in the one order:
// static, controllers, age-key, sync, cutover, converge, cutover when
// ready. A phase left out on purpose is noted in r.
func Assemble(ctx context.Context, o Options, r *verify.Report) (*Plan, error) {
	var built *rootsync.Render
	if o.Env.Path != "" {
		var err error
		if built, err = rootsync.Build(o.Env); err != nil {
			return nil, err
		}
	} else if o.Sync != nil || o.AgeKey != nil {
		return nil, errors.New("flow: the sync and age-key phases need an environment (Options.Env.Path)")
	}
	if built != nil && o.Sync != nil && built.Env.Origin.Layout == fluxrepo.LayoutBootstrap {
		// The root is flux bootstrap's, with a URL git does not hold here:
		// refused before the controllers phase touches the cluster.
		return nil, verify.InputErrorf("%s: %s is flux bootstrap's placeholder: the root %s/%s and its GitRepository are written by flux bootstrap with the repository's URL, which the repository does not hold; declare the real source with --source-kind GitRepository --source-url URL [--source-ref refs/heads/main] (the GitRepository and the Kustomization applying ./%s are then created as flux bootstrap writes them), or run flux bootstrap",
			o.Env.Path, built.Env.Origin.Location.File, built.Options.Namespace, built.Env.Options.RootName, o.Env.Path)
	}
	if built != nil && o.Sync != nil && o.Controllers != nil && built.Root == nil {
		// Nothing renders or declares the root (a tenant path passes the
		// offline check with a note): sync.root would refuse it only after
		// the controllers phase applied.
		return nil, verify.InputErrorf("%s renders no root Kustomization %s/%s and nothing declares one: declare it with --source-kind GitRepository --source-url URL [--source-ref refs/heads/main], or commit it (a sync.yaml listed in %s/kustomization.yaml)",
			o.Env.Path, built.Options.Namespace, built.Options.RootName, o.Env.Path)
	}
	rel, err := o.release(built, r)
	if err != nil {
		return nil, err
	}
	phases := o.static(built, r)
	if o.AgeKey != nil {
		// Read once, here: the seeds are decrypted with it too.
		ak := *o.AgeKey
		if ak.Input.Identities, err = agekey.Read(ak.Input); err != nil {
			return nil, err
		}
		o.AgeKey = &ak
	}
	if o.Sync != nil {
		p, err := o.inputs(built)
		if err != nil {
			return nil, err
		}
		if p != nil {
			phases = append(phases, p)
		}
	}
	var ctrl *controllers.Phase
	if o.Controllers != nil {
		co := *o.Controllers
		co.Force, co.Timeout = o.Force, o.Timeout
		// up runs what it may on a cluster the Flux Operator manages:
		// the controllers are the operator's.
		co.YieldToOperator = true
		if built != nil {
			// The bootstrap layout keeps the controllers' customization in
			// the repository: the root applies it after the sync.
			if err := co.Render.UseRepository(built.Env); err != nil {
				return nil, err
			}
		}
		ctrl = controllers.NewPhase(co, o.Cluster.Connect)
		phases = append(phases, ctrl)
	}
	if o.AgeKey != nil {
		p, err := o.ageKey(built, ctrl)
		if err != nil {
			return nil, err
		}
		phases = append(phases, p)
	}
	plan := &Plan{Release: rel}
	if o.Sync != nil {
		so := rootsync.RunOptions{Build: o.Env, Timeout: o.Timeout, Source: o.Sync.Source, Built: built}
		var err error
		if so.Serve, err = o.serve(ctx, built); err != nil {
			return nil, err
		}
		plan.Serve = so.Serve
		phases = append(phases, rootsync.NewPhase(so, o.Cluster.Connect))
	}
	if o.Cutover != nil {
		co := *o.Cutover
		co.Timeout = o.Timeout
		phases = append(phases, cutover.NewPhase(co, o.Cluster.Connect))
	}
	if o.Converge != nil {
		phases = append(phases, converge.NewPhase(o.Cluster.Connect, o.converge(built)))
	}
	if o.Sync != nil && o.Sync.CutoverWhenReady {
		phases = append(phases, o.whenReady(built, plan.Serve))
	}
	plan.Phases = phases
	return plan, nil
}

// inputs reads the --supply inputs, prepares the seeds and the supplied
// objects (decrypted with the age key when one is given) and returns the
// inputs phase, run before anything is written; nil when the root
// substitutes from nothing, nothing is supplied and every Kustomization's
// substituteFrom is rendered.
func (o Options) inputs(built *rootsync.Render) (pipeline.Phase, error) {
	var supplied []*rootsync.Supplied
	for _, f := range o.Sync.Supply {
		s, err := rootsync.ReadSupply(f, o.Sync.Stdin)
		if err != nil {
			return nil, err
		}
		supplied = append(supplied, s...)
	}
	var dec rootsync.Decrypter
	if o.AgeKey != nil && o.AgeKey.Input.Identities != nil {
		dec = o.AgeKey.Input.Identities
	}
	if err := rootsync.PrepareInputs(built, supplied, dec); err != nil {
		return nil, err
	}
	root := built.Env.Root
	if len(built.Inputs.Seeds)+len(supplied)+len(built.Env.Prerequisites()) == 0 && (root == nil || !root.Substitutes() || len(root.Spec.PostBuild.SubstituteFrom) == 0) {
		return nil, nil
	}
	return rootsync.NewInputsPhase(built, o.Cluster.Connect), nil
}

// static is phase static over the environment built, or nothing when it
// was switched off (which the report says) or none is built.
func (o Options) static(built *rootsync.Render, r *verify.Report) []pipeline.Phase {
	if built == nil {
		return nil
	}
	if o.Static == nil {
		r.Warn("--check=false: the repository's offline check (phase static) was skipped on purpose")
		return nil
	}
	b := built.Options
	co := check.Options{
		Options: fluxrepo.Options{Repo: b.Repo, Path: b.Path, Namespace: b.Namespace, RootName: b.RootName},
		Compare: o.Static.Compare, NoCompare: o.Static.NoCompare, Env: built.Env}
	if o.Sync != nil {
		// The inputs phase seeds these before the root (rootsync.PrepareInputs).
		for _, s := range rootsync.SelectSeeds(built.Env) {
			if co.BringUp == nil {
				co.BringUp = map[string]string{}
			}
			co.BringUp[s.Key()] = fmt.Sprintf("phase inputs seeds it from %s", s.Location)
		}
	}
	if c := o.Controllers; o.Release.FluxVersion != "" && (c == nil || c.Render.Manifests == "") {
		// The release chosen is the one installed: the Flux objects are
		// validated by its CRDs (with --manifests the version only labels
		// the objects: check judges by what the repository declares).
		// Without a choice check resolves the release as the run did
		// (fluxrelease.ForEnv over the same environment): the same one.
		co.FluxVersion, co.FluxVersionFrom = o.Release.FluxVersion, o.Release.From
	}
	return []pipeline.Phase{&check.Phase{Options: co}}
}

// ageKey reads the identity and returns the install phase over the
// environment built. With the controllers phase before it, the key's scope
// follows kustomize-controller's --sops-age-secret as that phase applies it,
// not as the cluster ran it before.
func (o Options) ageKey(built *rootsync.Render, ctrl *controllers.Phase) (pipeline.Phase, error) {
	in := o.AgeKey.Input
	var err error
	if in.Identities, err = agekey.Read(in); err != nil {
		return nil, err
	}
	ao := agekey.Options{Repo: o.Env.Repo, Path: o.Env.Path, Namespace: o.Env.Namespace, SecretName: o.AgeKey.SecretName,
		Rotate: o.AgeKey.Rotate, Force: o.Force, Env: built.Env}
	if ctrl != nil {
		ao.Fallback = func(context.Context) (*agekey.Fallback, error) {
			if ctrl.Operator() != "" {
				return nil, agekey.ErrReadLive // the operator's controllers run, not the render
			}
			return agekey.RenderedFallback(ctrl.Rendered(), "the render phase controllers applies")
		}
	}
	return agekey.NewInstallPhase(in, ao, o.Cluster.AgeKey), nil
}

// converge is the converge phase's options: over the environment built,
// or the live graph (in the cutover's namespace on a cutover).
func (o Options) converge(built *rootsync.Render) converge.Options {
	co := *o.Converge
	if o.Timeout > 0 {
		co.Timeout = o.Timeout
	}
	switch {
	case built != nil:
		co.Namespace = built.Options.Namespace
		co.Root = converge.NodeID{Namespace: built.Options.Namespace, Name: built.Options.RootName}
		Declare(&co, built)
	case o.Cutover != nil:
		co.Namespace = o.Cutover.Namespace
	}
	return co
}

// Declare makes the converge graph the repository's: every Kustomization
// the environment declares, transitively through spec.path (the one
// repository model, internal/fluxrepo, that r was built from), created yet
// or not.
func Declare(o *converge.Options, r *rootsync.Render) {
	o.Declared, o.From = converge.DeclaredKustomizations(r.Env), "the repository "+r.Options.Path
	o.DeclaredHelmReleases = converge.DeclaredHelmReleases(r.Env)
	if err := r.Env.Err(); err != nil {
		o.From += fmt.Sprintf(" (what the Kustomizations whose path did not build apply is not in it: %v)", err)
	}
}

// serve makes the snapshot --serve serves and binds its address (nil
// without --serve): everything --serve may refuse, before the first
// request.
func (o Options) serve(ctx context.Context, built *rootsync.Render) (*serve.Prepared, error) {
	if o.Sync.Serve == nil {
		return nil, nil
	}
	if built.Source == nil {
		return nil, verify.InputErrorf("--serve: %s renders no GitRepository for the root to read", built.Options.Path)
	}
	src := built.Source
	var ref *sourcev1.GitRepositoryRef
	oci, err := ociServe(built)
	if err != nil {
		return nil, err
	}
	if oci == nil {
		// What is served follows the whole spec.ref, as source-controller
		// reads it (serve.WantOf): the Flux Operator's ref.name too.
		if ref, err = serve.RefOf(src); err != nil {
			return nil, verify.InputErrorf("--serve: %w", err)
		}
	}
	cfg, err := o.Cluster.Config()
	if err != nil {
		return nil, err
	}
	s := o.Sync.Serve
	dirs, err := serve.DefaultDirs(s.Getenv)
	if err != nil {
		return nil, verify.InputErrorf("%w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--serve: this program's path: %w", err)
	}
	return serve.Prepare(ctx, serve.Options{
		Addr: s.Addr, URL: s.URL, For: s.For, Repo: o.Env.Repo, Ref: ref, OCI: oci,
		Namespace: src.GetNamespace(), Name: src.GetName(), APIServer: cfg.Host, Dirs: dirs,
		Command: append([]string{exe}, s.RunArgs...), Kube: serve.KubeOf(cfg), DryRun: o.DryRun,
	})
}

// whenReady is the cutover phase of --cutover-when-ready, on the root's
// GitRepository, ending the serving process p started.
func (o Options) whenReady(built *rootsync.Render, p *serve.Prepared) pipeline.Phase {
	wo := cutover.WhenReadyOptions{Namespace: built.Options.Namespace, Name: built.Options.Namespace, Wait: o.Sync.CutoverWait, Timeout: o.Timeout}
	if built.Source != nil {
		wo.Namespace, wo.Name, wo.Kind = built.Source.GetNamespace(), built.Source.GetName(), built.Source.GetKind()
	}
	if p != nil {
		wo.ServeDir = p.Dir
	}
	return cutover.NewWhenReadyPhase(wo, o.Cluster.Connect)
}
