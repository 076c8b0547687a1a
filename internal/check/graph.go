package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/runtime/dependency"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/gate"
)

// sharedNamespaces are Namespaces no single Kustomization should own.
var sharedNamespaces = []string{"kube-system", "flux-system", "default"}

func depRef(k *fluxrepo.Kustomization, name, ns string) string {
	if ns == "" {
		ns = k.Namespace
	}
	return ns + "/" + name
}

// checkGraph is check.graph: the root, cycles, dangling dependsOn and reachability.
func checkGraph(ch *checker, o Options, env *fluxrepo.Env) gate.Check {
	var fs []finding
	root, path := env.Root, env.Options.Path
	rootRef := env.Options.Namespace + "/" + env.Options.RootName
	kustFile := path + "/kustomization.yaml"
	if root == nil {
		if o.on(NoRoot) {
			fs = append(fs, finding{det: NoRoot, loc: fluxrepo.Location{File: kustFile},
				what: fmt.Sprintf("%s renders no root Kustomization %s: every Kustomization depending on it waits forever, and nothing applies %s after bootstrap", path, rootRef, path),
				fix:  fmt.Sprintf("add the environment's sync.yaml (Kustomization %s, spec.path ./%s, wait: false) to %s", rootRef, path, kustFile)})
		}
	} else {
		if env.Source == nil && o.on(NoRoot) {
			fs = append(fs, finding{det: NoRoot, loc: root.Location,
				what: fmt.Sprintf("the root Kustomization %s reads %s, which %s does not render", rootRef, root.SourceKey(), path),
				fix:  fmt.Sprintf("render the GitRepository in %s (e.g. flux-system/gotk-sync.yaml)", kustFile)})
		}
		if root.Path != path && o.on(Unreachable) {
			fs = append(fs, finding{det: Unreachable, loc: env.FindLine([]string{root.Location.File}, "", "path:"),
				what: fmt.Sprintf("the root Kustomization %s applies %s, not the environment's directory %s", rootRef, root.Spec.Path, path),
				fix:  fmt.Sprintf("set spec.path: ./%s", path)})
		}
		if root.Spec.Wait && o.on(RootWait) {
			fs = append(fs, finding{det: RootWait, loc: env.FindLine([]string{root.Location.File}, "", "wait:"),
				what: fmt.Sprintf("the root Kustomization %s has wait: true: it health-gates its own children, which depend on it — a deadlock", rootRef),
				fix:  "set wait: false on the root (it is then Ready on apply)"})
		}
	}
	// Cycles, with the dependency sort the controllers' tooling uses.
	if o.on(Cycle) {
		deps := make([]dependency.Dependent, 0, len(env.Kustomizations))
		for _, k := range env.Kustomizations {
			deps = append(deps, k.Kustomization)
		}
		if _, err := dependency.Sort(deps); err != nil {
			fs = append(fs, finding{det: Cycle, loc: cycleLocation(env, err.Error()),
				what: fmt.Sprintf("dependsOn %v: none of these Kustomizations can ever become Ready", err),
				fix:  "remove one dependsOn edge of the cycle"})
		}
	}
	if o.on(Dangling) {
		for _, k := range env.Kustomizations {
			for _, d := range k.Spec.DependsOn {
				ref := depRef(k, d.Name, d.Namespace)
				ns, name, _ := strings.Cut(ref, "/")
				if env.Kustomization(ns, name) == nil {
					fs = append(fs, finding{det: Dangling, loc: env.FindLine([]string{k.Location.File}, "", "name: "+d.Name),
						what: fmt.Sprintf("Kustomization %s depends on %s, which the environment does not render: it waits forever (DependencyNotReady)", k.Ref(), ref),
						fix:  fmt.Sprintf("remove the dependsOn entry, or render Kustomization %s", ref)})
				}
			}
		}
	}
	if o.on(Unreachable) && root != nil {
		for _, k := range env.Kustomizations {
			if k != root && !reachable(env, k) {
				fs = append(fs, finding{det: Unreachable, loc: k.Location,
					what: fmt.Sprintf("Kustomization %s is rendered by %s but no Kustomization reachable from the root %s applies it: bootstrap creates it once, nothing updates or prunes it", k.Ref(), path, rootRef),
					fix:  fmt.Sprintf("make the root apply %s (spec.path ./%s), or move it under a path the root applies", path, path)})
			}
		}
		for _, key := range slices.Sorted(maps.Keys(env.Data)) {
			if d := env.Data[key]; d.AppliedBy == "" {
				fs = append(fs, finding{det: Unreachable, loc: d.Location,
					what: fmt.Sprintf("%s is rendered by %s but applied by no Kustomization reachable from the root %s", key, path, rootRef),
					fix:  fmt.Sprintf("make the root apply %s (spec.path ./%s)", path, path)})
			}
		}
	}
	return ch.verdict(Graph, fs, fmt.Sprintf("root %s applies %s; %d Kustomization(s), no cycle, every dependsOn rendered, every node reachable from the root", rootRef, path, len(env.Kustomizations)))
}

func reachable(env *fluxrepo.Env, k *fluxrepo.Kustomization) bool {
	seen := map[string]bool{}
	for k != nil && !seen[k.Ref()] {
		if k == env.Root {
			return true
		}
		seen[k.Ref()] = true
		if k.AppliedBy == "" {
			return false
		}
		ns, name, _ := strings.Cut(k.AppliedBy, "/")
		k = env.Kustomization(ns, name)
	}
	return false
}

// cycleLocation points at the first Kustomization named in the cycle error.
func cycleLocation(env *fluxrepo.Env, msg string) fluxrepo.Location {
	_, chain, _ := strings.Cut(msg, ": ")
	first, _, _ := strings.Cut(chain, " -> ")
	ns, name, _ := strings.Cut(first, "/")
	if k := env.Kustomization(ns, name); k != nil {
		return k.Location
	}
	return fluxrepo.Location{}
}

// checkRace is check.race/<ns>/<name>: a Kustomization substituting from an
// object another Kustomization applies must depend on it, directly or
// through dependencies reading the same source (dependsOn is
// revision-gated only within one source).
func checkRace(ch *checker, o Options, env *fluxrepo.Env) []gate.Check {
	var out []gate.Check
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
			if d.AppliedBy == k.Ref() {
				if o.on(RaceDep) {
					fs = append(fs, finding{det: RaceDep, warn: true, loc: k.Location,
						what: fmt.Sprintf("Kustomization %s substitutes from %s, which it applies itself: a changed knob is substituted one reconcile late", k.Ref(), key),
						fix:  fmt.Sprintf("move %s to a Kustomization that %s depends on", key, k.Ref())})
				}
				continue
			}
			if via, ok := dependsOnSameSource(env, k, d.AppliedBy); ok {
				ev = append(ev, fmt.Sprintf("%s is applied by %s; %s waits for it: %s", key, d.AppliedBy, k.Ref(), strings.Join(via, " -> ")))
				continue
			}
			if o.on(RaceDep) {
				fs = append(fs, finding{det: RaceDep, loc: k.Location,
					what: fmt.Sprintf("Kustomization %s substitutes from %s (%s), applied by %s, without depending on it through same-source dependsOn: a knob added in one commit renders as missing (or empty) until %s applies it", k.Ref(), key, d.Location, d.AppliedBy, d.AppliedBy),
					fix:  fmt.Sprintf("add dependsOn: [{name: %s}] to Kustomization %s (%s)", strings.SplitN(d.AppliedBy, "/", 2)[1], k.Ref(), k.Location)})
			}
		}
		out = append(out, ch.verdict(Race.Each(k.Ref()), fs, fmt.Sprintf("Kustomization %s waits for whoever applies what it substitutes from", k.Ref()), ev...))
	}
	if len(out) == 0 {
		out = append(out, Race.Pass("no Kustomization substitutes from an object the environment renders"))
	}
	return out
}

// dependsOnSameSource finds a dependsOn path from k to target whose every
// edge joins two Kustomizations reading the same source.
func dependsOnSameSource(env *fluxrepo.Env, k *fluxrepo.Kustomization, target string) ([]string, bool) {
	prev := map[string]string{k.Ref(): ""}
	queue := []*fluxrepo.Kustomization{k}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur.Ref() == target {
			var path []string
			for r := target; r != ""; r = prev[r] {
				path = append(path, r)
			}
			slices.Reverse(path)
			return path, true
		}
		for _, d := range cur.Spec.DependsOn {
			ref := depRef(cur, d.Name, d.Namespace)
			ns, name, _ := strings.Cut(ref, "/")
			dk := env.Kustomization(ns, name)
			if dk == nil || dk.SourceKey() != cur.SourceKey() {
				continue
			}
			if _, seen := prev[ref]; !seen {
				prev[ref] = cur.Ref()
				queue = append(queue, dk)
			}
		}
	}
	return nil, false
}

// checkPrune is check.prune-hazard/<ns>/<name>/<namespace>: a prune: true
// Kustomization that is the only declarer of a shared Namespace turns a move
// of that file into "delete namespace".
func checkPrune(ch *checker, o Options, env *fluxrepo.Env) []gate.Check {
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
	var out []gate.Check
	for _, ns := range slices.Sorted(maps.Keys(declarers)) {
		ks := declarers[ns]
		if len(ks) != 1 {
			continue
		}
		k := ks[0]
		if !k.Spec.Prune || protected[ns+"@"+k.Ref()] {
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
