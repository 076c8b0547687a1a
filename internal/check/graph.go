package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// sharedNamespaces are Namespaces no single Kustomization should own.
var sharedNamespaces = []string{"kube-system", fluxobj.DefaultNamespace, "default"}

// checkGraph is check.graph: the root, cycles, dangling dependsOn, and
// every Kustomization applied by the root (fluxgraph's relation: the chain
// of Kustomizations whose builds render it reaches the root).
func checkGraph(ch *checker, o Options, env *fluxrepo.Env, g *fluxgraph.Graph) verify.Check {
	var fs []finding
	root, path := env.Root, env.Options.Path
	rootRef := env.Options.Namespace + "/" + env.Options.RootName
	kustFile := path + "/kustomization.yaml"
	// noRootNote: no root here and nothing here waits for one — a path
	// whose root is made elsewhere (a tenant path, a fleet's ResourceSet).
	noRootNote := ""
	if root == nil {
		waiting := dependsOnRoot(env)
		switch {
		case len(waiting) == 0:
			noRootNote = fmt.Sprintf("no root here: %s renders no Kustomization %s, nothing declares one, and no Kustomization here depends on it — checked as a path whose root is made elsewhere (a tenant path, a fleet's ResourceSet); to check it as a root applies it, declare that root with --source-url URL (bootstrap up/sync --source-kind GitRepository --source-url URL create the GitRepository and the Kustomization %s applying ./%s)", path, rootRef, rootRef, path)
		case o.on(NoRoot):
			loc := fluxrepo.Location{File: path}
			if slices.Contains(env.RootFiles, kustFile) {
				loc.File = kustFile
			}
			fs = append(fs, finding{det: NoRoot, loc: loc,
				what: fmt.Sprintf("%s renders no root Kustomization %s and no FluxInstance spec.sync (or flux-instance values instance.sync) has path %s, but %s depend(s) on it: they wait forever, and nothing applies %s after bootstrap", path, rootRef, path, strings.Join(waiting, ", "), path),
				fix:  fmt.Sprintf("add the root to %s (Kustomization %s with spec.path ./%s and its source, as flux bootstrap's flux-system/gotk-sync.yaml), or declare it: a FluxInstance with spec.sync.path %s, or --source-url URL (--source-kind, --source-ref) when it is made outside the repository", path, rootRef, path, path)})
		}
	} else {
		if env.RootSource == nil && o.on(NoRoot) {
			fs = append(fs, finding{det: NoRoot, loc: root.Location,
				what: fmt.Sprintf("the root Kustomization %s reads %s, which %s does not render", rootRef, root.SourceKey(), path),
				fix:  fmt.Sprintf("render the %s in %s (e.g. flux-system/gotk-sync.yaml)", fluxobj.KustomizationSource(root.Kustomization).Kind, kustFile)})
		}
		if root.Path != path && o.on(Unreachable) {
			fs = append(fs, finding{det: Unreachable, loc: env.FindLine([]string{root.Location.File}, "", "path:"),
				what: fmt.Sprintf("the root Kustomization %s applies %s, not the environment's directory %s", rootRef, root.Spec.Path, path),
				fix:  fmt.Sprintf("set spec.path: ./%s", path)})
		}
		if o.on(RootWait) {
			fs = append(fs, rootWaitFindings(env, g, rootRef)...)
		}
	}
	unbuilt := failedBuilds(env)
	// fluxgraph's verdicts; the root is the environment's (above), and
	// "ordered after the root" is converge's relation, not check's.
	for _, p := range g.Problems() {
		switch {
		case p.Kind == fluxgraph.CycleFound && o.on(Cycle):
			fs = append(fs, finding{det: Cycle, loc: nodeLocation(env, p.CycleNodes...),
				what: fmt.Sprintf("dependsOn %v: none of these %ss can ever become Ready", p.Cycle, p.CycleNodes[0].KindName()),
				fix:  "remove one dependsOn edge of the cycle"})
		case p.Kind == fluxgraph.DanglingEdge && o.on(Dangling) && unbuilt != "":
			// What a path that did not build would apply is unknown: the
			// target may be there. Said, not failed ([build] fails it).
			e := p.Edge
			fs = append(fs, finding{det: Dangling, warn: true, loc: env.FindLine(nodeFiles(env, e.From), "", "name: "+e.To.Name),
				what: fmt.Sprintf("%s %s depends on %s, which no path that built renders; %s did not build whole and may render it: judged once it builds", e.From.KindName(), e.From.Key(), e.To.Key(), unbuilt),
				fix:  fmt.Sprintf("fix the [build] failure first; then render %s %s or remove the dependsOn entry", e.To.KindName(), e.To.Key())})
		case p.Kind == fluxgraph.DanglingEdge && o.on(Dangling):
			e := p.Edge
			fs = append(fs, finding{det: Dangling, loc: env.FindLine(nodeFiles(env, e.From), "", "name: "+e.To.Name),
				what: fmt.Sprintf("%s %s depends on %s, which the environment does not render: it waits forever (DependencyNotReady)", e.From.KindName(), e.From.Key(), e.To.Key()),
				fix:  fmt.Sprintf("remove the dependsOn entry, or render %s %s", e.To.KindName(), e.To.Key())})
		case p.Kind == fluxgraph.DependsOnKustomization && o.on(HelmDependsOn):
			e := p.Edge
			fs = append(fs, finding{det: HelmDependsOn, loc: env.FindLine(nodeFiles(env, e.From), "", "name: "+e.To.Name),
				what: fmt.Sprintf("HelmRelease %s depends on %s, which is a Kustomization: helm-controller reads dependsOn as HelmReleases only (checkDependencies) and it waits forever", e.From.Key(), e.To.Key()),
				fix:  helmDependsOnFix(g, e)})
		case p.Kind == fluxgraph.InvalidChartSource && o.on(ChartSource):
			fs = append(fs, finding{det: ChartSource, loc: nodeLocation(env, p.Node),
				what: p.Err.Error(), fix: "set exactly one of spec.chart and spec.chartRef (chartRef kind OCIRepository, HelmChart or ExternalArtifact)"})
		case p.Kind == fluxgraph.ChartSourceNotRendered && o.on(ChartSource) && unbuilt != "":
			fs = append(fs, finding{det: ChartSource, warn: true, loc: nodeLocation(env, p.Node),
				what: fmt.Sprintf("HelmRelease %s reads its chart from %s, which no path that built renders; %s did not build whole and may render it: judged once it builds", p.Node.Key(), p.Source, unbuilt),
				fix:  fmt.Sprintf("fix the [build] failure first; then render %s or fix the reference", p.Source)})
		case p.Kind == fluxgraph.ChartSourceNotRendered && o.on(ChartSource):
			fs = append(fs, finding{det: ChartSource, loc: nodeLocation(env, p.Node),
				what: fmt.Sprintf("HelmRelease %s reads its chart from %s, which the environment does not render: helm-controller reports it not found and never installs", p.Node.Key(), p.Source),
				fix:  fmt.Sprintf("render %s in a Kustomization the HelmRelease's applier depends on, or fix the reference", p.Source)})
		}
	}
	if o.on(WaitOrder) {
		fs = append(fs, waitOrder(env, g)...)
	}
	if o.on(Unreachable) && root != nil {
		for _, id := range g.NotAppliedByRoot {
			fs = append(fs, finding{det: Unreachable, loc: nodeLocation(env, id),
				what: fmt.Sprintf("%s %s is rendered by %s but no Kustomization reachable from the root %s applies it: bootstrap creates it once, nothing updates or prunes it", id.KindName(), id.Key(), path, rootRef),
				fix:  fmt.Sprintf("make the root apply %s (spec.path ./%s), or move it under a path the root applies", path, path)})
		}
		for _, key := range slices.Sorted(maps.Keys(env.Data)) {
			if d := env.Data[key]; d.AppliedBy == "" {
				fs = append(fs, finding{det: Unreachable, loc: d.Location,
					what: fmt.Sprintf("%s is rendered by %s but applied by no Kustomization reachable from the root %s", key, path, rootRef),
					fix:  fmt.Sprintf("make the root apply %s (spec.path ./%s)", path, path)})
			}
		}
	}
	if noRootNote != "" {
		return ch.verdict(Graph, fs, fmt.Sprintf("%d Kustomization(s), no cycle, every dependsOn rendered", len(env.Kustomizations))+helmSummary(env)+"; "+noRootNote)
	}
	return ch.verdict(Graph, fs, fmt.Sprintf("root %s (%s) applies %s; %d Kustomization(s), no cycle, every dependsOn rendered, every node reachable from the root", rootRef, env.Origin, path, len(env.Kustomizations))+helmSummary(env))
}

// rootWaitFindings is [root-wait]: the root health-checks (wait: true, or
// spec.healthChecks) Kustomizations that wait for it through dependsOn —
// kustomize-controller leaves the Kustomization itself out of its own
// health check, so only those are a deadlock (fluxgraph.RootWaiters).
func rootWaitFindings(env *fluxrepo.Env, g *fluxgraph.Graph, rootRef string) []finding {
	root := env.Root
	if direct, through := fluxgraph.RootWaiters(env, g); len(direct)+len(through) > 0 {
		// wait: true, or (without it) spec.healthChecks naming them.
		how, field, fix := "has wait: true: it health-checks", "wait:", "set wait: false on the root (it is then Ready on apply)"
		if !root.Spec.Wait {
			how, field, fix = "names in spec.healthChecks", "healthChecks:", "drop those entries from the root's spec.healthChecks"
		}
		what := fmt.Sprintf("the root Kustomization %s %s Kustomization %s, which depend(s) on it", rootRef, how, strings.Join(direct, ", "))
		if len(direct) == 0 {
			what = fmt.Sprintf("the root Kustomization %s %s Kustomization %s, which wait(s) for it through dependsOn", rootRef, how, strings.Join(through, ", "))
		} else if len(through) > 0 {
			what += fmt.Sprintf(" (and %s, through dependsOn)", strings.Join(through, ", "))
		}
		if len(direct) > 0 {
			fix += fmt.Sprintf(", or drop the dependsOn on %s from %s", rootRef, strings.Join(direct, ", "))
		}
		return []finding{{det: RootWait, loc: env.FindLine([]string{root.Location.File}, "", field), fix: fix,
			what: what + " — a deadlock: the root is not Ready until they are, and they wait for the root (DependencyNotReady) until its health check fails at its timeout"}}
	}
	return nil
}

// failedBuilds names the Kustomizations whose path did not build ([build]),
// "" when every path built: what they would apply is unknown.
func failedBuilds(env *fluxrepo.Env) string {
	var out []string
	for _, k := range env.Kustomizations {
		switch {
		case k.Err != nil && len(k.OnceFixed) > 0:
			// Repaired: built without its broken entries, which may hold it.
			out = append(out, k.Ref()+" (built without the broken entries of "+strings.Join(k.OnceFixed, ", ")+")")
		case k.Err != nil:
			out = append(out, k.Ref())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "Kustomization " + strings.Join(out, ", ")
}

// dependsOnRoot lists the Kustomizations whose dependsOn names the root
// (Options.Namespace/RootName; an entry's namespace defaults to the
// dependent's, as kustomize-controller reads it).
func dependsOnRoot(env *fluxrepo.Env) []string {
	var out []string
	for _, k := range env.Kustomizations {
		for _, d := range k.Spec.DependsOn {
			if d.Name == env.Options.RootName && fluxobj.NamespaceOr(d.Namespace, k.Namespace) == env.Options.Namespace {
				out = append(out, k.Ref())
				break
			}
		}
	}
	return out
}

// waitOrder finds Kustomizations that health-check a HelmRelease (wait:
// true, or a spec.healthChecks entry naming it) whose dependsOn chain
// reaches a HelmRelease another Kustomization applies, that they do not
// wait for. kustomize-controller v1.9.5 holds one of its --concurrent
// workers for the whole health check (kstatus: the HelmRelease is
// InProgress until Ready), and helm-controller v1.6.4 keeps the release
// DependencyNotReady until each dependency is Ready (checkDependencies):
// when the workers are all held by such checks, the Kustomization that
// would apply the missing release never gets one, and they all wait out
// their timeout. Seen on the sandbox with 30 such Kustomizations and the
// default --concurrent=4.
func waitOrder(env *fluxrepo.Env, g *fluxgraph.Graph) []finding {
	if !g.AppliersKnown {
		return nil
	}
	var fs []finding
	for _, k := range env.Kustomizations {
		kid := fluxgraph.ID(k.Kustomization, env.Options.Namespace)
		waits := settled(g, kid)
		missing := map[fluxgraph.NodeID][]string{}
		// need records that k's health check waits for release dep (for
		// hid) and walks on to dep's own dependencies — unless a
		// Kustomization k waits for health-checks dep: then dep is Ready,
		// and so are its dependencies, before k applies anything.
		var need func(hid, dep fluxgraph.NodeID, seen map[fluxgraph.NodeID]bool)
		need = func(hid, dep fluxgraph.NodeID, seen map[fluxgraph.NodeID]bool) {
			if seen[dep] {
				return
			}
			seen[dep] = true
			n := g.Nodes[dep]
			if n == nil || n.AppliedBy == (fluxgraph.NodeID{}) {
				return // not rendered: check.graph's [dangling]
			}
			if !waits[n.AppliedBy] {
				what := hid.Key().String()
				if dep != hid {
					what += " needs " + dep.Key().String()
				}
				missing[n.AppliedBy] = append(missing[n.AppliedBy], what)
			} else if by := env.Kustomization(n.AppliedBy.Namespace, n.AppliedBy.Name); by != nil && n.AppliedBy != kid && healthChecked(g, by, n.AppliedBy, dep) {
				return
			}
			for _, d := range n.DependsOn {
				need(hid, d, seen)
			}
		}
		for _, hid := range g.IDs {
			if hid.IsHelmRelease() && healthChecked(g, k, kid, hid) {
				need(hid, hid, map[fluxgraph.NodeID]bool{})
			}
		}
		for _, by := range slices.SortedFunc(maps.Keys(missing), func(a, b fluxgraph.NodeID) int { return strings.Compare(a.String(), b.String()) }) {
			if slices.Contains(g.Upstream(by), kid) {
				// by waits for k: it applies nothing before k is Ready, and k
				// is not Ready before by applied them.
				fs = append(fs, finding{det: WaitOrder, loc: k.Location,
					what: fmt.Sprintf("Kustomization %s health-checks HelmReleases that need releases Kustomization %s applies (%s), and %s waits for %s: a deadlock — %s's health check fails at its timeout and %s never applies", k.Ref(), by, strings.Join(missing[by], ", "), by, k.Ref(), k.Ref(), by),
					fix:  fmt.Sprintf("apply those dependencies in %s or a Kustomization it depends on, or apply the dependent HelmReleases from %s (or a Kustomization after it)", k.Ref(), by)})
				continue
			}
			fs = append(fs, finding{det: WaitOrder, warn: true, loc: k.Location,
				what: fmt.Sprintf("Kustomization %s health-checks HelmReleases that need releases Kustomization %s applies (%s), without depending on %s: it holds one of kustomize-controller's --concurrent workers until they are Ready, and when every worker is held so, %s never gets one to apply them — the health checks wait out their timeout", k.Ref(), by, strings.Join(missing[by], ", "), by, by),
				fix:  fmt.Sprintf("add dependsOn: [%s] to Kustomization %s (%s)", dependsOnEntry(by, k.Namespace), k.Ref(), k.Location)})
		}
	}
	return fs
}

// healthChecked says kustomize-controller health-checks HelmRelease hid
// in Kustomization k's reconcile (kustomize-controller v1.9.5 checkHealth):
// under wait: true every object k applies, and only those; otherwise the
// spec.healthChecks entries, matched as given
// (inventory.ReferenceToObjMetadataSet defaults no namespace).
func healthChecked(g *fluxgraph.Graph, k *fluxrepo.Kustomization, kid, hid fluxgraph.NodeID) bool {
	if k.Spec.Wait {
		n := g.Nodes[hid]
		return n != nil && n.AppliedBy == kid
	}
	for _, h := range k.Spec.HealthChecks {
		if h.Kind == fluxobj.HelmReleaseKind && h.Name == hid.Name && h.Namespace == hid.Namespace {
			return true
		}
	}
	return false
}

// settled is what is in place before Kustomization kid applies anything:
// kid itself, everything it waits for (Upstream), and the chain of
// Kustomizations that apply it, with what they wait for — a release one of
// those applied went out in the apply that created kid.
func settled(g *fluxgraph.Graph, kid fluxgraph.NodeID) map[fluxgraph.NodeID]bool {
	out := map[fluxgraph.NodeID]bool{}
	for id := kid; id != (fluxgraph.NodeID{}) && !out[id]; {
		out[id] = true
		for _, u := range g.Upstream(id) {
			out[u] = true
		}
		n := g.Nodes[id]
		if n == nil {
			break
		}
		id = n.AppliedBy
	}
	return out
}

func helmSummary(env *fluxrepo.Env) string {
	if len(env.HelmReleases) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d HelmRelease(s), each dependsOn a rendered HelmRelease, each chart source rendered", len(env.HelmReleases))
}

// helmDependsOnFix says how to order a HelmRelease after a Kustomization:
// through the Kustomization that applies it.
func helmDependsOnFix(g *fluxgraph.Graph, e fluxgraph.Edge) string {
	fix := "remove the entry or depend on a HelmRelease instead"
	by := g.Nodes[e.From].AppliedBy
	switch {
	case by == e.To:
		return fix + fmt.Sprintf("; Kustomization %s applies %s, so it is already ordered after it", e.To, e.From.Key())
	case by != (fluxgraph.NodeID{}):
		return fix + fmt.Sprintf("; to order it after Kustomization %s, add dependsOn: [{name: %s, namespace: %s}] to Kustomization %s, which applies it", e.To, e.To.Name, e.To.Namespace, by)
	}
	return fix + fmt.Sprintf("; to order it after Kustomization %s, make the Kustomization that applies it depend on %s", e.To, e.To)
}

// nodeLocation is where the first of ids is declared.
func nodeLocation(env *fluxrepo.Env, ids ...fluxgraph.NodeID) fluxrepo.Location {
	if len(ids) == 0 {
		return fluxrepo.Location{}
	}
	id := ids[0]
	if id.IsHelmRelease() {
		if hr := env.HelmRelease(id.Namespace, id.Name); hr != nil {
			return hr.Location
		}
		return fluxrepo.Location{}
	}
	if k := env.Kustomization(id.Namespace, id.Name); k != nil {
		return k.Location
	}
	return fluxrepo.Location{}
}

// nodeFiles is the file declaring id (nil when not known: all files).
func nodeFiles(env *fluxrepo.Env, id fluxgraph.NodeID) []string {
	if l := nodeLocation(env, id); l.File != "" {
		return []string{l.File}
	}
	return nil
}

// checkRace is check.race/<ns>/<name>: a Kustomization substituting from an
// object another Kustomization applies must depend on it, directly or
// through dependencies reading the same source (dependsOn is
// revision-gated only within one source: fluxobj.RevisionGated, which
// fluxgraph's GatedPath follows).
func checkRace(ch *checker, o Options, env *fluxrepo.Env, g *fluxgraph.Graph) []verify.Check {
	var out []verify.Check
	for _, k := range env.Kustomizations {
		if !k.Substitutes() || len(k.Spec.PostBuild.SubstituteFrom) == 0 {
			continue
		}
		var fs []finding
		var ev []string
		for _, ref := range k.Spec.PostBuild.SubstituteFrom {
			key := fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)
			d := env.Data[key]
			if d == nil || d.AppliedBy == "" {
				continue // check.knobs / check.graph
			}
			applier, _ := fluxgraph.ParseID(d.AppliedBy)
			if d.AppliedBy == k.Ref() {
				if o.on(RaceDep) && !ref.Optional && o.Policy.prerequisite(key) == nil && substitutesAny(k) {
					fs = append(fs, finding{det: RaceDep, loc: k.Location,
						what: fmt.Sprintf("Kustomization %s substitutes from %s (%s), which only it applies%s and nothing else creates: it cannot come up on a fresh cluster — kustomize-controller loads substituteFrom before it applies anything and fails the build (%s), so %s is never created", k.Ref(), key, d.Location, madeBy(d), freshClusterError(k, ref), key),
						fix:  fmt.Sprintf("mark it optional: true in spec.postBuild.substituteFrom of Kustomization %s (%s) (the first reconcile renders without it, the next substitutes it), or move %s to a Kustomization that %s depends on", k.Ref(), k.Location, key, k.Ref())})
					continue
				}
				if o.on(RaceDep) {
					fs = append(fs, finding{det: RaceDep, warn: true, loc: k.Location,
						what: fmt.Sprintf("Kustomization %s substitutes from %s, which it applies itself: a changed knob is substituted one reconcile late", k.Ref(), key),
						fix:  fmt.Sprintf("move %s to a Kustomization that %s depends on", key, k.Ref())})
				}
				continue
			}
			if via := g.GatedPath(fluxgraph.ID(k.Kustomization, env.Options.Namespace), applier); via != nil {
				ev = append(ev, fmt.Sprintf("%s is applied by %s; %s waits for it: %s", key, d.AppliedBy, k.Ref(), joinIDs(via)))
				continue
			}
			cause, causeFix := raceCause(env, k, d, applier)
			if o.on(RaceDep) && d.Watched {
				// kustomize-controller v1.9.5 watches substituteFrom objects
				// matching --watch-configs-label-selector and reconciles
				// their readers when one changes (kustomization_manager.go):
				// the window is one reconcile, failed in strict mode.
				fs = append(fs, finding{det: RaceDep, warn: true, loc: k.Location, cause: cause + " (watched: one reconcile late)", item: key, causeFix: causeFix,
					what: fmt.Sprintf("Kustomization %s substitutes from %s (%s), applied by %s, without depending on it; it is watched (reconcile.fluxcd.io/watch: Enabled), so a knob added in one commit fails (strict) or renders empty for one reconcile, until %s applies it and the watch reconciles %s again", k.Ref(), key, d.Location, d.AppliedBy, d.AppliedBy, k.Ref()),
					fix:  fmt.Sprintf("add dependsOn: [%s] to Kustomization %s (%s) to close the window", dependsOnEntry(applier, k.Namespace), k.Ref(), k.Location)})
				continue
			}
			if o.on(RaceDep) {
				fs = append(fs, finding{det: RaceDep, loc: k.Location, cause: cause, item: key, causeFix: causeFix,
					what: fmt.Sprintf("Kustomization %s substitutes from %s (%s), applied by %s, without depending on it through same-source dependsOn: a knob added in one commit renders as missing (or empty) until %s applies it", k.Ref(), key, d.Location, d.AppliedBy, d.AppliedBy),
					fix:  fmt.Sprintf("add dependsOn: [%s] to Kustomization %s (%s)", dependsOnEntry(applier, k.Namespace), k.Ref(), k.Location)})
			}
		}
		out = append(out, ch.about(k, Race.Each(k.Ref()), fs, fmt.Sprintf("Kustomization %s waits for whoever applies what it substitutes from", k.Ref()), ev...))
	}
	if len(out) == 0 {
		out = append(out, Race.Pass("no Kustomization substitutes from an object the environment renders"))
	}
	return out
}

// madeBy says which object k applies makes d at runtime, when one does.
func madeBy(d *fluxrepo.Data) string {
	if d.MadeBy == "" {
		return ""
	}
	return " (made by " + d.MadeBy + ", which it applies)"
}

// substitutesAny says some object of k goes through substitution:
// fluxcd/pkg/kustomize SubstituteVariables returns before it loads the
// substituteFrom objects for one labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled.
func substitutesAny(k *fluxrepo.Kustomization) bool {
	for _, r := range k.Resources {
		if !fluxrepo.SubstitutionDisabled(r) {
			return true
		}
	}
	return false
}

// freshClusterError is what kustomize-controller reports for k on a
// cluster without the object ref names: its own code
// (fluxcd/pkg/kustomize LoadVariables, v1.35.6 as kustomize-controller
// v1.9.5 builds with) asked of a cluster that has nothing.
func freshClusterError(k *fluxrepo.Kustomization, ref kustomizev1.SubstituteReference) string {
	kc := k.DeepCopy()
	kc.Spec.PostBuild.SubstituteFrom = []kustomizev1.SubstituteReference{ref}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kc)
	if err == nil {
		_, err = fluxkustomize.LoadVariables(context.Background(), fluxrepo.DataClient{Env: &fluxrepo.Env{}}, unstructured.Unstructured{Object: u})
	}
	if err == nil {
		return "not found"
	}
	return err.Error()
}

// dependsOnEntry is the dependsOn entry naming id from a dependent in
// namespace ns: the namespace is spelled out when it differs, since
// kustomize-controller defaults it to the dependent's own (an entry without
// it would fail "dependency not found").
func dependsOnEntry(id fluxgraph.NodeID, ns string) string {
	if id.Namespace == ns {
		return fmt.Sprintf("{name: %s}", id.Name)
	}
	return fmt.Sprintf("{name: %s, namespace: %s}", id.Name, id.Namespace)
}

func joinIDs(ids []fluxgraph.NodeID) string {
	s := make([]string, 0, len(ids))
	for _, id := range ids {
		s = append(s, id.String())
	}
	return strings.Join(s, " -> ")
}

// checkPrune is check.prune-hazard/<ns>/<name>/<namespace>: a prune: true
// Kustomization that is the only declarer of a shared Namespace turns a move
// of that file into "delete namespace".
func checkPrune(ch *checker, o Options, env *fluxrepo.Env) []verify.Check {
	declarers := map[string][]*fluxrepo.Kustomization{}
	deployers := map[string]map[string]bool{}
	protected := map[string]bool{}
	for _, k := range env.Kustomizations {
		if !k.Built {
			continue
		}
		add := func(ns string) {
			if ns == "" {
				return
			}
			if deployers[ns] == nil {
				deployers[ns] = map[string]bool{}
			}
			deployers[ns][k.Ref()] = true
		}
		add(k.Spec.TargetNamespace)
		for _, r := range k.Resources {
			// Owned under the name the cluster gets: a component's
			// ${NAMESPACE} as k substitutes it.
			if strings.Contains(r.GetName(), "${") || strings.Contains(r.GetNamespace(), "${") {
				r = env.Applied(k, r)
			}
			if r.GetKind() == "Namespace" && r.GetApiVersion() == "v1" {
				if !slices.Contains(declarers[r.GetName()], k) {
					declarers[r.GetName()] = append(declarers[r.GetName()], k)
				}
				if r.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" || r.GetLabels()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" {
					protected[r.GetName()+"@"+k.Ref()] = true
				}
				continue
			}
			add(r.GetNamespace())
		}
	}
	var out []verify.Check
	for _, ns := range slices.Sorted(maps.Keys(declarers)) {
		ks := declarers[ns]
		if len(ks) != 1 {
			continue
		}
		k := ks[0]
		if !k.Spec.Prune || protected[ns+"@"+k.Ref()] {
			continue
		}
		// The root declaring the namespace it lives in (flux bootstrap's
		// gotk-components.yaml): moving that file moves the environment
		// itself, and the root would prune itself with it.
		if k == env.Root && ns == k.Namespace {
			continue
		}
		var others []string
		for d := range deployers[ns] {
			if d != k.Ref() {
				others = append(others, d)
			}
		}
		slices.Sort(others)
		if !slices.Contains(sharedNamespaces, ns) && len(others) == 0 {
			continue
		}
		why := "a shared system namespace"
		if len(others) > 0 {
			why = "Kustomizations " + strings.Join(others, ", ") + " deploy into it"
		}
		if !o.on(Prune) {
			continue
		}
		decl := env.Locate(k.Files, "Namespace", "", ns)
		out = append(out, ch.verdict(PruneHazard.Each(k.Ref()+"/"+ns), []finding{{det: Prune, warn: true, loc: decl,
			what: fmt.Sprintf("Kustomization %s (prune: true) is the only declarer of Namespace %s (%s): moving that file out of %s deletes the namespace and everything in it", k.Ref(), ns, why, k.Path),
			fix:  "declare Namespace " + ns + " in a Kustomization that never moves, or annotate it kustomize.toolkit.fluxcd.io/prune: disabled"}}, ""))
	}
	if len(out) == 0 {
		out = append(out, PruneHazard.Pass("no prune: true Kustomization is the sole declarer of a shared Namespace"))
	}
	return out
}

// raceCause is the defect a [race] finding shares with its siblings, and
// its one fix when there is one. The homelab shape (DESIGN.md §10): a
// parent Kustomization applies the children and a settings object, and
// one of its spec.patches sets every child's substituteFrom — without
// dependsOn on the parent. Every child reached by that patch is one
// defect, and the fix is that patch: kustomize-controller passes
// spec.patches to kustomize as the generated kustomization's patches
// (fluxcd/pkg/kustomize Generator), and kustomize applies each to the
// objects its target selects (sigs.k8s.io/kustomize/api resmap Select:
// name, namespace, GVK as regular expressions, label and annotation
// selectors) — read in kustomize api v0.21.2, the one this module builds
// with, as kustomize-controller v1.9.5 does.
func raceCause(env *fluxrepo.Env, k *fluxrepo.Kustomization, d *fluxrepo.Data, applier fluxgraph.NodeID) (cause, fix string) {
	cause = fmt.Sprintf("substitute from %s, applied by Kustomization %s, without depending on it", d.Key(), d.AppliedBy)
	p := env.Kustomization(applier.Namespace, applier.Name)
	if p == nil || k.AppliedBy != p.Ref() || p.Spec.Wait {
		// A parent with wait: true health-checks its children: a child
		// depending on it would deadlock, so no patch fixes it.
		return cause, ""
	}
	i, loc := reachingPatch(env, p, k, d.Name)
	if i < 0 {
		return cause, ""
	}
	cause = fmt.Sprintf("substitute from %s %s, set by spec.patches[%d] of Kustomization %s (%s), which applies it, without depending on %s", d.Kind, d.Name, i, p.Ref(), loc, p.Ref())
	fix = fmt.Sprintf("one patch for them all: add dependsOn: [{name: %s, namespace: %s}] to spec.patches[%d] of Kustomization %s (%s), the patch that sets their substituteFrom; it reaches every Kustomization named (keep wait: false on %s)",
		p.Name, p.Namespace, i, p.Ref(), loc, p.Ref())
	return cause, fix
}

// reachingPatch is the index and location of the patch of parent p's
// spec.patches whose target selects child k and that sets a substituteFrom
// naming name (-1 when none).
func reachingPatch(env *fluxrepo.Env, p, k *fluxrepo.Kustomization, name string) (int, fluxrepo.Location) {
	var child *resource.Resource
	for _, r := range p.Resources {
		if r.GetKind() == kustomizev1.KustomizationKind && r.GetName() == k.Name && (r.GetNamespace() == k.Namespace || r.GetNamespace() == "") {
			child = r
			break
		}
	}
	if child == nil {
		return -1, fluxrepo.Location{}
	}
	m := resmap.New()
	if err := m.Append(child); err != nil {
		return -1, fluxrepo.Location{}
	}
	for i, pt := range p.Spec.Patches {
		if pt.Target == nil || !strings.Contains(pt.Patch, "substituteFrom") || !strings.Contains(pt.Patch, name) {
			continue
		}
		t := pt.Target
		sel, err := m.Select(kustypes.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, Name: t.Name, Namespace: t.Namespace},
			LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector})
		if err != nil || len(sel) == 0 {
			continue
		}
		loc := p.Location
		if ls := env.Lines(p.Location.File, p.Location.Line, "substituteFrom"); len(ls) > 0 {
			loc.Line = ls[0]
		}
		return i, loc
	}
	return -1, fluxrepo.Location{}
}

// graphScan is what the detectors of check.graph read.
type graphScan struct{}
