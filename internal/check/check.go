// Package check is `bootstrap check` (issue #11): the offline, static phase.
// It loads an environment with fluxrepo (built as kustomize-controller
// builds it) and, with no cluster, reports what would break at reconcile
// time: post-build substitution run through the controller's own code in
// strict mode, substituteFrom knobs across environments, the Kustomization
// graph (cycles, dangling dependsOn, reachability, the root's wait, the
// substitution race) and prune hazards on shared Namespaces.
package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is the phase of every gate here.
const PhaseName = "static"

// The gates, declared once.
var (
	Render = verify.Def{ID: "check.render", Phase: PhaseName, Stage: verify.Before,
		Title: "the environment builds as kustomize-controller builds it"}
	Substitution = verify.Def{ID: "check.substitution", Phase: PhaseName, Stage: verify.Before, Prefix: true,
		Title: "post-build substitution succeeds as the release's kustomize-controller runs it and renders no default or literal by accident"}
	Knobs = verify.Def{ID: "check.knobs", Phase: PhaseName, Stage: verify.Before, Prefix: true,
		Title: "substituteFrom objects are rendered (or listed as prerequisites), agree across environments and are used"}
	Graph = verify.Def{ID: "check.graph", Phase: PhaseName, Stage: verify.Before,
		Title: "the Kustomization graph has a root, no cycle, no dangling or unreachable node"}
	Race = verify.Def{ID: "check.race", Phase: PhaseName, Stage: verify.Before, Prefix: true,
		Title: "a Kustomization depends on whoever applies what it substitutes from"}
	CEL = verify.Def{ID: "check.cel", Phase: PhaseName, Stage: verify.Before,
		Title: "every CEL expression (readyExpr, healthCheckExprs) compiles in its controller's environment"}
	PruneHazard = verify.Def{ID: "check.prune-hazard", Phase: PhaseName, Stage: verify.Before, Prefix: true,
		Title: "no prune: true Kustomization is the only declarer of a shared Namespace"}
)

// Gates lists every gate of the phase.
func Gates() []verify.Def {
	return []verify.Def{Render, Release, Substitution, Knobs, Graph, CEL, Race, PruneHazard}
}

// The detectors, each naming one defect class (verify.Detector, the
// public vocabulary: a Finding's Detector compares with them as it is).
// Options.Disable turns one off (the tests prove each one load-bearing
// that way).
const (
	Undefined  verify.Detector = "undefined"   // ${X} with X undefined: strict mode fails the Kustomization
	DefaultOp  verify.Detector = "default-op"  // ${X:-d} on an undefined X; := and :? always
	ParseError verify.Detector = "parse-error" // an expansion the parser rejects: fails the Kustomization
	Literal    verify.Detector = "literal"     // ${…} where nothing substitutes: ships literally
	KnobEnv    verify.Detector = "knob-env"    // a knob defined in one environment only
	// Prerequisite: a substituteFrom object no Kustomization renders (made
	// out of band): a warning offline, required live.
	Prerequisite verify.Detector = "prerequisite"
	KnobUnused   verify.Detector = "knob-unused" // a knob nobody references
	Cycle        verify.Detector = "cycle"
	Dangling     verify.Detector = "dangling"
	Unreachable  verify.Detector = "unreachable"
	RootWait     verify.Detector = "root-wait"
	// WaitOrder: a Kustomization health-checks a HelmRelease whose
	// dependsOn chain needs a release another Kustomization applies,
	// without depending on that Kustomization.
	WaitOrder verify.Detector = "wait-order"
	NoRoot    verify.Detector = "no-root"
	RaceDep   verify.Detector = "race"
	Prune     verify.Detector = "prune-hazard"
	// HelmDependsOn: a HelmRelease's dependsOn names a Kustomization.
	HelmDependsOn verify.Detector = "helm-depends-on"
	// ChartSource: a HelmRelease's chart source is invalid or not rendered.
	ChartSource verify.Detector = "chart-source"
	// TypeChange: a built-in object that no longer decodes after
	// substitution (a value whose YAML type changed).
	TypeChange verify.Detector = "type"
	// BadCEL: a readyExpr or healthCheckExprs expression the controller
	// cannot compile: it stalls the object with InvalidCELExpression.
	BadCEL verify.Detector = "cel"
	// Schema: a Flux object the API server refuses (or whose field it
	// drops) under the Flux release's CRDs, after substitution.
	Schema verify.Detector = "schema"
	// Build: a Kustomization whose path does not build (kustomize's error,
	// a path that is not a directory, an artifact not made):
	// kustomize-controller fails that Kustomization (BuildFailed) and
	// reconciles the others.
	Build verify.Detector = "build"
	// Unread: an entry of a kustomization file this offline check cannot
	// read (a remote resource, base or generator file, a file over the
	// read bound), left out of the build: what it adds is not checked.
	Unread verify.Detector = "unread"

	// SourceMissing: a Kustomization's sourceRef nothing renders (not the
	// root's source): it waits forever.
	SourceMissing verify.Detector = "source-missing"

	// TwoAppliers: an object applied by two Kustomizations (appliers.go).
	TwoAppliers verify.Detector = "two-appliers"
)

// Options select the environment and what it is compared with.
type Options struct {
	fluxrepo.Options
	// Compare are the root paths of the other environments whose knobs must
	// match. Nil means the sibling directories of Path that build and have
	// their own root Kustomization; NoCompare turns the comparison off.
	Compare   []string
	NoCompare bool
	// Disable turns detectors off.
	Disable map[verify.Detector]bool
	// Env is the environment already loaded with Options (a command that
	// built it before the first request); nil: Run loads it.
	Env *fluxrepo.Env
	// Policy is the repository's PolicyFile, already loaded; nil: Run
	// loads it (none in the repository: the defaults).
	Policy *Policy
	// Bootstrap is what the repository's own bootstrap creates before Flux
	// (bootstrapfiles.Read), already read; nil: Run reads it. Its objects
	// count as prerequisites made before Flux, as the policy's declared ones.
	Bootstrap *bootstrapfiles.Bootstrap
	// FluxVersion is the Flux release whose CRDs and controller defaults
	// judge the environment (embedded in the binary), given explicitly;
	// "" is the release the repository declares, else the pinned one
	// (fluxrelease.Resolve).
	FluxVersion string
	// FluxVersionFrom says where an explicit FluxVersion came from, for
	// the report (e.g. "--flux-version", "FLUX_VERSION in versions.env").
	FluxVersionFrom string
	// BringUp are the objects the bring-up this check gates (phase static
	// of up and sync) creates before the root's first reconcile, by key
	// (fluxrepo.DataKey), each with how; nil: a check alone. A commit-time
	// race on one of them cannot hit this bring-up: it is a warning here,
	// still a failure of check.
	BringUp map[string]string

	// watch is kustomize-controller's watch on ConfigMaps and Secrets
	// (set by Run).
	watch watching
	// mutators are the admission webhooks and policies that may rewrite
	// Kustomizations (set by Run).
	mutators []mutator
	// live are the other roots running on the same cluster (set by
	// Every; liveWith).
	live []liveRoot
	// strict is kustomize-controller's substitution mode on the release
	// (set by Run).
	strict strictness
	// siblings caches the environments loaded for comparison, by root
	// name and path, across the roots one check of every cluster visits
	// (nil: no cache).
	siblings map[string]sibling
}

func (o Options) on(d verify.Detector) bool { return !o.Disable[d] }

// Result is what Run found: the checks, and the models it read.
type Result struct {
	Checks []verify.Check
	// Findings are the defects behind the checks that did not pass, one per
	// located defect (for SARIF and other tools).
	Findings []Finding
	Env      *fluxrepo.Env
	// Release is the Flux release the environment was judged by.
	Release fluxrelease.Release
	// Others are the environments compared with, by root path.
	Others map[string]*fluxrepo.Env
}

// Run loads the environment and checks it. The error is an input error
// (verify.InputError) for what the user gave (see Phase.Before).
func Run(ctx context.Context, o Options) (*Result, error) {
	// The flag first, before the repository is read.
	if err := Preflight(o); err != nil {
		return nil, err
	}
	if o.Policy == nil {
		p, err := LoadPolicy(o.Repo)
		if err != nil {
			return nil, err
		}
		o.Policy = p
	}
	if o.Bootstrap == nil {
		b, err := bootstrapfiles.Read(o.Repo)
		if err != nil {
			return nil, err
		}
		o.Bootstrap = b
	}
	o.Policy = o.Policy.withBootstrap(o.Bootstrap)
	// One copy of the repository for this environment and the siblings
	// compared with it (fluxrepo.Copies), unless the caller keeps one for
	// more (Every: every root).
	if o.Copies == nil {
		o.Copies = fluxrepo.NewCopies()
		defer o.Copies.Close() //nolint:errcheck // a temporary directory
	}
	o.Options = shareBuilds(o.Options)
	// A Kustomization whose path does not build is that Kustomization's
	// failure ([build]), as kustomize-controller fails only it: the model
	// keeps going past it, and builds it again without the entry that
	// broke it, so what it renders is still checked (the root directory
	// too: its failure is the repository's defect, exit 1). What cannot be
	// read offline (a remote resource) is a hole, not a wall (Holes).
	o.KeepGoing, o.Holes = true, true
	env := o.Env
	if env == nil {
		var err error
		if env, err = fluxrepo.Load(o.Options); err != nil {
			return nil, err
		}
	}
	j, err := resolveRelease(ctx, o, env)
	if err != nil {
		return nil, err
	}
	sv := j.schema
	o.strict, o.watch = j.strict, j.watch
	o.mutators = mutatorsOf(env, o.Bootstrap)
	r := &Result{Env: env, Release: j.rel, Others: map[string]*fluxrepo.Env{}}
	// The siblings load while this environment's objects are substituted:
	// neither reads what the other makes (the substitution reads env and
	// the copy's file index, kept as made), and each leaves a core to
	// the other. Their findings are recorded in the order they always were.
	var compareNotes []string
	others := make(chan struct{})
	go func() {
		defer close(others)
		if !o.NoCompare {
			r.Others, compareNotes = loadOthers(o, env)
		}
	}()
	ch, sub := &checker{policy: o.Policy, env: env}, &checker{policy: o.Policy, env: env}
	subs, refs := checkSubstitution(sub, ctx, o, env, sv)
	<-others
	if o.Policy.fromFile() {
		compareNotes = append(compareNotes, "policy: "+PolicyFile+" (docs/policy.md)")
	}
	r.Checks = append(r.Checks, renderCheck(ch, o, env, r.Others, compareNotes), releaseCheck(j, env, o.Bootstrap))
	ch.findings = append(ch.findings, sub.findings...)
	otherSources(env, o.Policy, subs)
	r.Checks = append(r.Checks, subs...)
	r.Checks = append(r.Checks, checkKnobs(ch, o, env, r.Others, refs)...)
	g := fluxgraph.FromEnv(env)
	liveEv := shareLive(g, o.live)
	graph := checkGraph(ch, o, env, g)
	graph.Evidence = append(graph.Evidence, liveEv...)
	r.Checks = append(r.Checks, graph)
	r.Checks = checkAppliers(ch, o, env, r.Checks) // [two-appliers] joins check.graph
	r.Checks = append(r.Checks, checkCEL(ch, o, env))
	r.Checks = append(r.Checks, checkRace(ch, o, env, g)...)
	r.Checks = append(r.Checks, checkPrune(ch, o, env)...)
	r.Findings = ch.findings
	return r, nil
}

// otherSources makes the skipped substitution check of a Kustomization
// reading another repository's source a note (an optional skip): the
// controllers accept the repository, and what lies outside it is no check
// this one could have run (issue 45). The policy's otherSources: required
// makes it a required skip (exit 3).
func otherSources(env *fluxrepo.Env, p *Policy, subs []verify.Check) {
	required := p != nil && p.OtherSources == "required"
	for i, c := range subs {
		if c.Verdict != verify.Skip {
			continue
		}
		for _, k := range env.Kustomizations {
			if !k.OtherSource || c.ID != Substitution.Each(k.Ref()).ID {
				continue
			}
			if env.SourceOf(k) == nil {
				// Never applied: check.graph's [source-missing] says so.
				subs[i].Optional = true
				subs[i].Message += " (its source is not rendered: check.graph's [source-missing])"
				continue
			}
			subs[i].Optional = !required
			if required {
				subs[i].Message += " (required by " + PolicyFile + ": otherSources: required)"
			} else {
				subs[i].Message += " (a note: its path is in another repository, which this check does not read)"
			}
		}
	}
}

// renderCheck is check.render: the root directory built, and every
// Kustomization path that does not build is a [build] finding of that
// Kustomization (the root directory's, the repository's: Env.RootErr);
// an entry left out because it cannot be read offline is an [unread]
// warning. A check that built none of its Kustomizations is a skip,
// never a pass.
func renderCheck(ch *checker, o Options, env *fluxrepo.Env, others map[string]*fluxrepo.Env, notes []string) verify.Check {
	var fs []finding
	if env.RootErr != nil && o.on(Build) {
		fs = append(fs, rootBuildFinding(env))
	}
	for _, k := range env.Kustomizations {
		if k.Err != nil && o.on(Build) {
			fs = append(fs, buildFinding(env, k))
		}
	}
	if o.on(Unread) {
		for _, h := range env.Holes {
			if len(h.By) > 0 {
				fs = append(fs, unreadFinding(h))
			}
		}
	}
	built, objects := 0, 0
	for _, k := range env.Kustomizations {
		if k.Built {
			built++
			objects += len(k.Resources)
		}
	}
	ev := []string{fmt.Sprintf("repository %s, root directory %s (files: %s)", env.Repo, env.Options.Path, strings.Join(env.RootFiles, ", "))}
	for _, k := range env.Kustomizations {
		s := fmt.Sprintf("Kustomization %s (%s) path %s", k.Ref(), k.Location, k.Path)
		switch {
		case k.Built && k.Err != nil:
			s += fmt.Sprintf(": %d object(s), built without the entries that break it", len(k.Resources))
		case k.Built:
			s += fmt.Sprintf(": %d object(s)", len(k.Resources))
		case k.Err != nil:
			s += ": not built: its path does not build"
		default:
			s += ": not built: " + k.Note
		}
		if len(k.OnceFixed) > 0 {
			s += " (checked as it would be once " + strings.Join(k.OnceFixed, ", ") + " is fixed)"
		}
		ev = append(ev, s)
	}
	for _, p := range slices.Sorted(maps.Keys(others)) {
		ev = append(ev, "compared with environment "+p)
	}
	ev = append(ev, notes...)
	for _, n := range env.Notes {
		if !slices.ContainsFunc(env.Kustomizations, func(k *fluxrepo.Kustomization) bool { return k.Err != nil && k.Note == n }) {
			ev = append(ev, "note: "+n) // a [build] finding says it already
		}
	}
	c := ch.verdict(Render, fs, fmt.Sprintf("%s builds: %d Kustomization(s), %d built, %d object(s) in their paths", env.Options.Path, len(env.Kustomizations), built, objects), ev...)
	if n := len(env.Kustomizations); n > 0 && built == 0 && c.Verdict != verify.Fail {
		// Nothing any Kustomization applies was checked: never a pass.
		msg := fmt.Sprintf("none of the %d Kustomization(s) of %s was built, so nothing they apply was checked", n, env.Options.Path)
		if c.Verdict == verify.Warn {
			msg += "; " + c.Message
		}
		c.Verdict, c.Message = verify.Skip, msg
	}
	return c
}

// buildFinding is the [build] finding of Kustomization k, whose path did
// not build (k.Err: the loader's message, kustomize's words in it).
// kustomize-controller v1.9.x (internal/controller/kustomization_controller.go,
// reconcile) marks that Kustomization Ready=False with reason BuildFailed
// and applies nothing of it; every other Kustomization is its own
// reconcile and goes on. Built again without the entries that broke it
// (k.Repaired), what it would apply is checked as once they are fixed.
func buildFinding(env *fluxrepo.Env, k *fluxrepo.Kustomization) finding {
	// The loader's BuildError carries the Kustomization and its location
	// apart from the cause, and says why (its Reason).
	msg, reason := k.Err.Error(), fluxrepo.BuildFailed
	var be *fluxrepo.BuildError
	if errors.As(k.Err, &be) {
		msg, reason = be.Cause.Error(), be.Reason
	}
	fix := fmt.Sprintf("make spec.path %q build (kustomize build %s)", k.Spec.Path, k.Path)
	switch {
	case reason == fluxrepo.ComponentUnderResources:
		// kustomize (api v0.21, internal/target/kusttarget.go
		// accumulateDirectory) accepts a kind: Component directory only
		// under components:.
		fix = "move the directory of the kind: Component kustomization from resources: to components: in the kustomization.yaml listing it (kustomize accepts a Component only under components:)"
	case reason == fluxrepo.PathNotFound:
		fix = fmt.Sprintf("point spec.path at a directory of the repository (relative to its root), or add %s", k.Path)
	case len(k.Repaired) > 0:
		fix = repairFix(k.Repaired[0])
	}
	consequence := "kustomize-controller fails it (BuildFailed) and applies nothing of it; the other Kustomizations are applied"
	if reason == fluxrepo.PathNotFound || reason == fluxrepo.GeneratorFailed {
		consequence = "the other Kustomizations are applied" // the loader's cause names the controller's words
	}
	what := fmt.Sprintf("Kustomization %s: %s; %s — what it would apply is unknown here, not checked", k.Ref(), msg, consequence)
	if k.Built {
		what = fmt.Sprintf("Kustomization %s: %s; %s — %s", k.Ref(), msg, consequence, repairedText(env, k.Repaired, k.Ref()))
	}
	return at(k.Location, verify.Finding{Detector: Build, Message: what, Fix: fix})
}

// repairedText says what a build without the broken entries checked.
func repairedText(env *fluxrepo.Env, holes []*fluxrepo.Hole, by string) string {
	var entries []string
	for _, h := range holes {
		entries = append(entries, h.String())
	}
	var rendered []string
	for _, k := range env.Kustomizations {
		if k.AppliedBy == by && k.Ref() != by {
			rendered = append(rendered, k.Ref())
		}
	}
	what := "what it renders"
	if len(rendered) > 0 {
		what += " (Kustomization " + strings.Join(rendered, ", ") + ")"
	}
	return fmt.Sprintf("built again without %s: %s is checked as it would be once %s is fixed", strings.Join(entries, "; "), what, strings.Join(fluxrepo.OnceFixedFiles(holes), ", "))
}

// repairFix is the fix of an entry that broke a build.
func repairFix(h *fluxrepo.Hole) string {
	switch {
	case strings.Contains(h.Why, "only under components:"):
		return fmt.Sprintf("in %s, move %q from %s: to components: (kustomize accepts a Component only under components:)", h.Location.File, h.Entry, h.Field)
	case strings.Contains(h.Why, "is not in the repository"):
		return fmt.Sprintf("commit %s, or remove the entry %q from %s of %s", strings.TrimSuffix(h.Why, " is not in the repository"), h.Entry, h.Field, h.Location.File)
	case strings.Contains(h.Why, "does not decode"):
		return fmt.Sprintf("make %s valid YAML (an alias *name needs its anchor &name earlier in the same document), or remove the entry", h.Entry)
	case h.Field == "":
		return fmt.Sprintf("fix %s, or move it out of the directory", h.Location.File)
	}
	return fmt.Sprintf("fix or remove the entry %q of %s in %s", h.Entry, h.Field, h.Location.File)
}

// rootBuildFinding is the [build] finding of the root directory, which
// does not build as committed: the repository's defect (exit 1), the root
// Kustomization's BuildFailed; what it renders is still checked when a
// build without the entries that break it succeeds.
func rootBuildFinding(env *fluxrepo.Env) finding {
	root := env.Options.Path
	loc := fluxrepo.Location{File: root}
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if st, err := os.Stat(filepath.Join(env.Repo, filepath.FromSlash(root), n)); err == nil && st.Mode().IsRegular() {
			loc = fluxrepo.Location{File: path.Join(root, n)}
			break
		}
	}
	fix := fmt.Sprintf("make %s build (kustomize build %s)", root, root)
	if len(env.RootRepaired) > 0 {
		loc = env.RootRepaired[0].Location
		fix = repairFix(env.RootRepaired[0])
	}
	what := fmt.Sprintf("the root directory %s does not build: %s; kustomize-controller fails the root Kustomization applying it (BuildFailed) and applies nothing of it", root, env.RootErr)
	by := ""
	if env.Root != nil {
		by = env.Root.Ref()
	}
	if len(env.RootRepaired) > 0 && len(env.RootResources) > 0 {
		what += " — " + repairedText(env, env.RootRepaired, by)
	} else {
		what += " — nothing it renders is checked"
	}
	return at(loc, verify.Finding{Detector: Build, Message: what, Fix: fix})
}

// loadOthers loads the environments to compare knobs with.
func loadOthers(o Options, env *fluxrepo.Env) (map[string]*fluxrepo.Env, []string) {
	out := map[string]*fluxrepo.Env{}
	var notes []string
	self := path.Clean(filepath.ToSlash(o.Path))
	paths := o.Compare
	explicit := paths != nil
	if !explicit {
		parent := path.Dir(self)
		entries, _ := os.ReadDir(filepath.Join(env.Repo, filepath.FromSlash(parent)))
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				paths = append(paths, path.Join(parent, e.Name()))
			}
		}
	}
	for _, p := range paths {
		p = path.Clean(filepath.ToSlash(p))
		if p == self {
			continue
		}
		oo := o.Options
		oo.Path = p
		// --flux-instance names this environment's declaration; a sibling
		// finds its own.
		oo.FluxInstance = ""
		var other *fluxrepo.Env
		var err error
		// By root name too: the roots of one check of every cluster may
		// have different names.
		key := oo.Namespace + "/" + oo.RootName + " " + p
		if c, ok := o.siblings[key]; ok {
			other, err = c.env, c.err
		} else {
			other, err = fluxrepo.Load(oo)
			if o.siblings != nil {
				o.siblings[key] = sibling{other, err}
			}
		}
		switch {
		case err != nil && explicit:
			notes = append(notes, fmt.Sprintf("environment %s not compared: %v", p, err))
		case err != nil:
			// A sibling that does not build is named, not silently skipped.
			notes = append(notes, fmt.Sprintf("environment %s not compared: %v", p, err))
		case other.Root == nil:
			if explicit {
				notes = append(notes, fmt.Sprintf("environment %s not compared: it renders no root Kustomization %s/%s", p, oo.Namespace, oo.RootName))
			}
		default:
			out[p] = other
		}
	}
	return out, notes
}

// shareBuilds has the loads of one check take each other's kustomize
// builds (fluxrepo.Builds): a directory two loads build from the same
// generated kustomization file, every filesystem answer the same (the apps
// tree two clusters share, a sibling's), is built once. A caller keeping
// builds of its own (diff) keeps them.
func shareBuilds(o fluxrepo.Options) fluxrepo.Options {
	if o.RecordBuilds == nil && o.ReuseBuilds == nil {
		b := fluxrepo.NewBuilds()
		o.RecordBuilds, o.ReuseBuilds = b, b
	}
	return o
}

// sibling is one environment loaded for comparison.
type sibling struct {
	env *fluxrepo.Env
	err error
}

// Phase is the static phase for the pipeline: its before-gates are the
// checks; Do and After do nothing. An input error is recorded in the
// report's Error (exit 2) and fails check.render, which stops later phases.
type Phase struct {
	pipeline.Base // Do, After: the phase only checks
	Options       Options
	// Result is set by Before.
	Result *Result
}

// Name is "static".
func (p *Phase) Name() string { return PhaseName }

// ReadOnly is true: the offline check writes nothing (no cluster lock).
func (p *Phase) ReadOnly() bool { return true }

// Gates lists the gates.
func (p *Phase) Gates() []verify.Def { return Gates() }

// Before runs the checks. An input error (flags, the policy file, a path
// that does not exist, a root the path does not render) is exit 2; a
// directory that does not build, the root's included, is a [build] failure.
func (p *Phase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	run.Progressf("static: checking %s in %s", p.Options.Path, p.Options.Repo)
	r, err := Run(ctx, p.Options)
	if err != nil {
		if verify.IsInput(err) {
			return nil, err
		}
		return []verify.Check{Render.Fail(err.Error())}, nil
	}
	p.Result = r
	run.Report.Facts["fluxRelease"] = r.Release.String()
	if r.Env.Origin.Adopted != "" && r.Env.Root != nil {
		run.Report.Facts["root"] = r.Env.Root.Ref() + " (" + r.Env.Origin.Adopted + ")"
	}
	return r.Checks, nil
}

var _ pipeline.Phase = (*Phase)(nil)

// finding is a detector's draft of one located defect: the verify.Finding
// it becomes (record) once the policy (which may allow it or make a
// warning a failure) and the merge of its repeats (Count, Lines) have
// had their say. Its Verdict is the detector's, Fail or Warn, until then.
// Beyond verify.Finding it holds only what those steps read.
type finding struct {
	verify.Finding
	// name is what the policy matches: the variable of a default-operator
	// form, the object key of a prerequisite.
	name string
	// search is the text that finds every line of the defect in its
	// object (an expression).
	search string
}

// at is the draft of f located at l: a failure unless f says Warn.
func at(l fluxrepo.Location, f verify.Finding) finding {
	f.File, f.Line = l.File, l.Line
	if f.Verdict != verify.Warn {
		f.Verdict = verify.Fail
	}
	return finding{Finding: f}
}

// location is where f is, as the text says it ("(file unknown)" without
// a file).
func (f finding) location() fluxrepo.Location {
	return fluxrepo.Location{File: f.File, Line: f.Line}
}

func (f finding) warn() bool { return f.Verdict == verify.Warn }

// String is f as the evidence writes it: "file:line: [detector] message
// (n occurrence(s) on line(s) …) — fix: … — policy".
func (f finding) String() string {
	return fmt.Sprintf("%s: [%s] %s", f.location(), f.Detector, f.Message) + findingTail(f.Finding)
}

// findingTail is what follows a finding's message on its line: its
// occurrences, its fix and the policy's word.
func findingTail(f verify.Finding) string {
	s := ""
	if f.Count > 1 || len(f.Lines) > 1 {
		s += fmt.Sprintf(" (%d occurrence(s)%s)", max(f.Count, 1), linesText(f.Lines))
	}
	if f.Fix != "" {
		s += " — fix: " + f.Fix
	}
	if f.Policy != "" {
		s += " — " + f.Policy
	}
	return s
}

func linesText(lines []int) string {
	if len(lines) == 0 {
		return ""
	}
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = fmt.Sprint(l)
	}
	return " on line(s) " + strings.Join(s, ", ")
}

// Finding is one located defect and the gate reporting it: the public
// verify.Finding (its Subject is the Kustomization the defect affects,
// namespace/name) and the ID of the check it is in, which Result.Findings
// of several checks needs.
type Finding struct {
	// Gate is the ID of the check reporting it.
	Gate string `json:"gate"`
	verify.Finding
}

// checker gathers the findings of one run.
type checker struct {
	findings []Finding
	policy   *Policy
	// env locates every line of a repeated defect (nil: the first only).
	env *fluxrepo.Env
}

// merge makes the same defect found several times in one object (the
// same variable on several lines) one finding with its count and lines.
func (ch *checker) merge(all []finding) []finding {
	var out []finding
	idx := map[string]int{}
	for _, f := range all {
		key := strings.Join([]string{string(f.Detector), string(f.Verdict), f.location().String(), f.Message, f.Fix, f.Subject}, "\x00")
		if i, ok := idx[key]; ok {
			out[i].Count += max(f.Count, 1)
			continue
		}
		f.Count = max(f.Count, 1)
		idx[key] = len(out)
		out = append(out, f)
	}
	for i := range out {
		f := &out[i]
		if f.search != "" && f.File != "" && ch.env != nil && f.Lines == nil {
			f.Lines = writtenLines(ch.env, f.location(), f.search)
			// Written on more lines than the parser counted (literal
			// findings are listed once per expression).
			f.Count = max(f.Count, len(f.Lines))
		}
		if len(f.Lines) < 2 {
			f.Lines = nil
		}
	}
	return out
}

// about is verdict for the checks of one Kustomization: its findings name
// it, so the text report can group them across Kustomizations.
func (ch *checker) about(k *fluxrepo.Kustomization, def verify.Def, all []finding, passMsg string, ev ...string) verify.Check {
	for i := range all {
		if all[i].Subject == "" {
			all[i].Subject = k.Ref()
		}
	}
	return ch.verdict(def, all, passMsg, ev...)
}

// record keeps f, its verdict decided, as a Finding of def and as the
// check's verify.Finding.
func (ch *checker) record(def verify.Def, f finding, gfs *[]verify.Finding) {
	vf := f.Finding
	if vf.Count < 2 {
		vf.Count = 0
	}
	ch.findings = append(ch.findings, Finding{Gate: def.ID, Finding: vf})
	*gfs = append(*gfs, vf)
}

// verdict turns findings into one check of def.
func (ch *checker) verdict(def verify.Def, all []finding, passMsg string, ev ...string) verify.Check {
	all = ch.merge(all)
	var gfs []verify.Finding
	// The policy's word first: an allowed finding is reported, not counted.
	var fs []finding
	for _, f := range all {
		if why := ch.policy.apply(&f); why != "" {
			ev = append(ev, why+": "+f.String())
			f.Verdict, f.Policy = verify.Pass, why
			ch.record(def, f, &gfs)
			continue
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		c := def.Pass(passMsg, ev...)
		c.Findings = gfs
		return c
	}
	for _, f := range fs {
		ch.record(def, f, &gfs)
	}
	fails := slices.DeleteFunc(slices.Clone(fs), finding.warn)
	// The message names the first finding; the evidence lists them all
	// when there are several.
	lines := make([]string, 0, len(fs)+len(ev))
	for _, f := range fs {
		if len(fs) > 1 {
			lines = append(lines, f.String())
		}
	}
	lines = append(lines, ev...)
	var c verify.Check
	if len(fails) > 0 {
		msg := fails[0].String()
		if len(fs) > 1 {
			msg = fmt.Sprintf("%d defect(s); first: %s", len(fs), msg)
		}
		c = def.Fail(msg, lines...)
	} else {
		msg := fs[0].String()
		if len(fs) > 1 {
			msg = fmt.Sprintf("%d warning(s); first: %s", len(fs), msg)
		}
		c = def.Warn(msg, lines...)
	}
	c.Findings = gfs
	return c
}
