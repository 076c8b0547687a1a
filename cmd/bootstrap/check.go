package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// checkLong is check's help text (docs/reference is generated from it).
const checkLong = `Builds the environment's root (clusters/<env>) and every Flux Kustomization it declares,
transitively, exactly as kustomize-controller builds them, and runs the controller's own
post-build substitution on every object against the ConfigMaps and Secrets the
environment renders (ExternalSecrets and SealedSecrets count, with the keys they declare).

Without --env and --path, check finds every cluster root the repository declares (a
Kustomization flux-system/flux-system, or --namespace/--root, whose spec.path is a directory
of the repository: this tool's sync.yaml, flux bootstrap's gotk-sync.yaml, one applied by
hand; a self-applying root Kustomization of any name, in a file inside the directory its
spec.path names and reading a GitRepository or OCIRepository the repository declares, as a
Taskfile bootstrap applies it; flux bootstrap's placeholder; a FluxInstance's or the
flux-instance chart values' spec.sync.path) and checks each by itself, with its own root
name, into one report: check.clusters names the roots
and the file:line that declares each, and a cluster's checks carry its path in their IDs
(clusters.dev:check.render for clusters/dev). The exit code is the worst of the clusters'
(1, then 3, then 0); a cluster whose root directory does not build is its check.render
failure; no root found is exit 2.

The environment is judged by the Flux release it deploys: --flux-version (or --versions-file)
when given, else the release the repository declares (a FluxInstance spec.distribution version
range or operator artifact, flux bootstrap's gotk-components.yaml header, a flux2 remote base,
an OCIRepository of flux-manifests or a GitRepository of flux2 with a tag), else the pinned
default. Its CRDs validate the Flux objects (as the Flux Operator installs them where a
FluxInstance manages the cluster), and its kustomize-controller's StrictPostBuildSubstitutions
(with the repository's own controller patches) decides whether an undefined ${VAR} fails the
Kustomization or renders empty. The report's check.flux-release says which release, from where.

The root is found as the cluster will have it: rendered by the root directory (this tool's
sync.yaml, flux bootstrap's flux-system/gotk-sync.yaml; without --root and --namespace,
the one self-applying root Kustomization of another name the path renders, said in the
report), or declared by a FluxInstance
(plain, or as flux-instance chart values) whose spec.sync.path is the path, or by
--source-url when it is made outside the repository, or by flux bootstrap's placeholder (a
flux-system/gotk-sync.yaml holding no object: the root flux bootstrap writes there, noted). A
path with no root that no Kustomization depends on (a tenant path) is checked with a note. A
directory without a
kustomization.yaml, the root included, is generated as kustomize-controller generates it.
A .bootstrap.yaml at the repository root (docs/policy.md) makes the check stricter or looser,
each choice with a reason; what it changes is still reported. No cluster is needed. Reports undefined variables, default-operator
expansions, expansions the parser rejects, literals that ship unsubstituted, substituteFrom
knobs that differ between environments or are unused, dependsOn cycles and dangling edges,
unreachable nodes, a root whose health check waits for what depends on it, the substitution
race, an object applied by two Kustomizations, and prune hazards.

What this offline check cannot read (a remote resource, base or generator file, a file over
the read bound) is left out of that build and reported once as a warning; the rest of the build
and every Kustomization below it are checked. A Kustomization of another repository's source is
a note.

Exit codes: 0 no defect (warnings allowed), 1 a defect (a Kustomization whose path does not
build among them, the root directory's too: each is built again without the entry that breaks
it, and what it renders is still checked), 2 input error (flags, the policy file, a path that
does not exist, a --root the path does not render), 3 incomplete (something could not be
checked, e.g. an ExternalArtifact no generator makes, or no Kustomization built).`

func newCheckCommand(a *app) *cobra.Command {
	var (
		o     check.Options
		rf    repoFlags
		root  rootFlags
		sarif string
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an environment of the GitOps repository offline: substitution, knobs, graph, prune hazards",
		Long:  checkLong,
		Example: `  bootstrap check --repo . --env dev
  bootstrap check                                  # every cluster root the repository declares
  bootstrap check --path kubernetes/flux/cluster   # root declared by a FluxInstance's spec.sync
  bootstrap check --path clusters/prod --source-kind OCIRepository --source-url oci://registry.example/fleet --source-ref latest
  bootstrap check --env prod --compare clusters/dev -o json
  bootstrap check --path clusters/staging --sarif check.sarif --junit check.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.check(cmd, o, rf, root, sarif) },
	}
	fl := cmd.Flags()
	rf.add(fl)
	fl.Var(input.NewNamespace(&o.Namespace, DefaultFluxNamespace), "namespace", "namespace of the root Kustomization")
	fl.Var(input.NewName(&o.RootName, DefaultFluxNamespace, "root Kustomization"), "root", "name of the root Kustomization")
	root.add(fl)
	addCompareFlags(fl, &o.Compare, &o.NoCompare, "")
	fl.StringVar(&o.FluxVersion, "flux-version", "", "the Flux release whose CRDs and controller defaults judge the environment (embedded: "+strings.Join(a.pins.EmbeddedFluxVersions, ", ")+"); default: the release the repository declares, else "+a.pins.FluxVersion)
	fl.BoolVar(&o.FetchRemote, "fetch-remote", false, "fetch what kustomization files list remotely, as kustomize-controller does, instead of leaving it out as an [unread] hole: remote files (resource URLs, generator files name=URL) over HTTP(S), remote bases cloned with kustomize's own loader; bounded in size and time")
	fl.Var(input.NewOutputFile(&sarif), "sarif", "also write the findings as SARIF 2.1.0 to this file")
	return cmd
}

// check validates the flags, then runs phase static and writes --sarif.
func (a *app) check(cmd *cobra.Command, o check.Options, rf repoFlags, root rootFlags, sarif string) error {
	run := a.s.NewRun("check", false)
	// Known before Preflight, so a refusal names where the release came
	// from (FLUX_VERSION, --versions-file), not a flag never given.
	if o.FluxVersion != "" {
		o.FluxVersionFrom = a.flagOrigin("flux-version")
	}
	if err := check.Preflight(o); err != nil {
		return a.s.Fail(cmd.Context(), run.Report, err)
	}
	var err error
	o.Repo = rf.repo
	if rf.env == "" && rf.path == "" {
		return a.checkEvery(cmd, run, o, root, sarif)
	}
	if o.Path, err = rf.resolve(); err != nil {
		return a.s.Fail(cmd.Context(), run.Report, err)
	}
	if o.Sync, err = root.sync(); err != nil {
		return a.s.Fail(cmd.Context(), run.Report, err)
	}
	o.FluxInstance = root.fluxInstance
	// No --root, --namespace, nor a declared root: a path whose one
	// self-applying root Kustomization has another name is checked as
	// that root (said in the report).
	o.AdoptRoot = !cmd.Flags().Changed("root") && !cmd.Flags().Changed("namespace") && o.Sync == nil && o.FluxInstance == ""
	run.Report.Facts["path"] = o.Path
	phase := &check.Phase{Options: o}
	return a.s.ExecuteThen(cmd.Context(), run, func() error { return writeSARIF(sarif, phase.Result) }, phase)
}

// checkEvery is check without --env and --path: every cluster root the
// repository declares (fluxrepo.Discover), each checked by itself.
func (a *app) checkEvery(cmd *cobra.Command, run *pipeline.Run, o check.Options, root rootFlags, sarif string) error {
	if root.url != "" || root.kind != "" || root.ref != "" || root.fluxInstance != "" {
		return a.s.Fail(cmd.Context(), run.Report, verify.InputErrorf("--source-kind, --source-url, --source-ref and --flux-instance declare the root of one cluster: pass its --path (or --env) too"))
	}
	roots, notes, err := fluxrepo.Discover(o.Repo, o.Options)
	if err != nil {
		return a.s.Fail(cmd.Context(), run.Report, err)
	}
	if len(roots) == 0 {
		msg := fmt.Sprintf("no cluster root found in %s: pass --path DIR (or --env NAME for clusters/NAME); %s", o.Repo, fluxrepo.DiscoverLooksFor(o.Options))
		if len(notes) > 0 {
			msg += "; passed over: " + strings.Join(notes, "; ")
		}
		return a.s.Fail(cmd.Context(), run.Report, verify.InputErrorf("%s", msg))
	}
	phase := &check.Every{Options: o, Roots: roots, Notes: notes}
	return a.s.ExecuteThen(cmd.Context(), run, func() error { return writeSARIF(sarif, phase.Result) }, phase)
}

// flagOrigin says where a flag's value came from: the command line, or
// the Origin applyEnvironment recorded (--versions-file, BOOTSTRAP_…).
func (a *app) flagOrigin(name string) string {
	return a.s.FlagOrigin(name)
}

// writeSARIF writes the findings to --sarif (when given and the check ran).
func writeSARIF(path string, res *check.Result) error {
	if path == "" || res == nil {
		return nil
	}
	if err := session.WriteFile(path, func(w io.Writer) error { return check.WriteSARIF(w, res) }); err != nil {
		return verify.InputErrorf("--sarif: %w", err)
	}
	return nil
}

// addCompareFlags are phase static's own flags, defined once: on check,
// and with the prefix "static: " on sync and up, which run the phase first.
func addCompareFlags(fl *pflag.FlagSet, compare *[]string, none *bool, prefix string) {
	fl.Var(input.NewRepoPaths(compare), "compare", prefix+"root directories of the environments whose substituteFrom knobs must match (default: every sibling of the path that has its own root)")
	fl.BoolVar(none, "no-compare", false, prefix+"do not compare knobs with other environments")
}

// rootFlags declare a root the repository does not hold: a FluxInstance
// file, or the source on the command line.
type rootFlags struct {
	kind, url, ref, fluxInstance string
}

func (r *rootFlags) add(fl *pflag.FlagSet) {
	fl.Var(input.NewRuled(&r.kind, "KIND", func(v string) error {
		return fluxrepo.CheckSyncKind(v, "--source-kind")
	}), "source-kind", "kind of the root's source when --source-url declares it: GitRepository, OCIRepository or Bucket (default GitRepository)")
	fl.Var(input.NewRuled(&r.url, "URL", func(v string) error {
		return fluxrepo.CheckSync(&fluxrepo.Sync{URL: v}, "--source-url")
	}), "source-url", "declare the root when the repository renders none and no FluxInstance spec.sync names the path: the URL of its source (no credentials)")
	fl.StringVar(&r.ref, "source-ref", "", "with --source-url: the Git reference (refs/heads/main), OCI tag or bucket name")
	fl.Var(input.NewRepoPath(&r.fluxInstance), "flux-instance", "the file holding the FluxInstance (or flux-instance chart values) whose spec.sync declares the root (default: any file of the repository whose spec.sync.path is the path)")
}

// sync is the root the flags declare (nil when none).
func (r *rootFlags) sync() (*fluxrepo.Sync, error) {
	if r.url == "" {
		if r.kind != "" || r.ref != "" {
			return nil, verify.InputErrorf("--source-kind and --source-ref declare a root with --source-url: add --source-url URL")
		}
		return nil, nil
	}
	s := &fluxrepo.Sync{Kind: r.kind, URL: r.url, Ref: r.ref}
	if s.Kind == "" {
		s.Kind = "GitRepository"
	}
	return s, fluxrepo.CheckSync(s, "--source-url")
}
