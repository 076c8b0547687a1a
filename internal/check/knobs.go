package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/envsubst/parse"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// checkKnobs is one check.knobs/<Kind>/<ns>/<name> per object some
// Kustomization substitutes from.
func checkKnobs(ch *checker, o Options, env *fluxrepo.Env, others map[string]*fluxrepo.Env, u usage) []verify.Check {
	type obj struct {
		users    []string
		first    *fluxrepo.Kustomization
		optional bool // every reference is optional
		// unread are readers whose paths were not built: the names they
		// use are unknown, so no knob is judged unused.
		unread []string
	}
	objs := map[string]*obj{}
	for _, r := range u.refs {
		ob := objs[r.key]
		if ob == nil {
			ob = &obj{optional: true, first: r.by}
			objs[r.key] = ob
		}
		if r.unread {
			ob.unread = append(ob.unread, r.by.Ref())
			continue
		}
		if !slices.Contains(ob.users, r.by.Ref()) {
			ob.users = append(ob.users, r.by.Ref())
		}
		ob.optional = ob.optional && r.optional
	}
	unused := unusedKnobs(env, u, func(key string) ([]string, []string) {
		if ob := objs[key]; ob != nil {
			return ob.users, ob.unread
		}
		return nil, nil
	}, slices.Sorted(maps.Keys(objs)))
	readers := map[*fluxrepo.Env]map[string]map[string]bool{}
	elsewhere := otherSourceKustomizations(env)
	var out []verify.Check
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		ob := objs[key]
		def := Knobs.Each(key)
		users := strings.Join(append(slices.Clone(ob.users), ob.unread...), ", ")
		d := env.Data[key]
		if d == nil {
			if pd := o.Policy.prerequisite(key); pd != nil {
				keys := "any key (none declared)"
				if !pd.Open {
					keys = "keys " + strings.Join(slices.Sorted(maps.Keys(pd.Values)), ", ")
				}
				what := "a declared prerequisite"
				if !o.Policy.declares(key) {
					what = "seeded by the repository's bootstrap"
				}
				out = append(out, ch.verdict(def, nil, fmt.Sprintf("%s is %s: %s; %s; substituted from by %s", key, what, pd.MadeBy, keys, users)))
				continue
			}
			var fs []finding
			if o.on(Prerequisite) && !ob.optional {
				fs = append(fs, prerequisiteFinding(env, u, key, ob.users, users, ob.first, elsewhere))
			}
			out = append(out, ch.verdict(def, fs, fmt.Sprintf("%s is not rendered, and every reference (%s) is optional: substitution proceeds without it", key, users)))
			continue
		}
		var fs []finding
		keys := slices.Sorted(maps.Keys(d.Values))
		var ev []string
		if o.on(KnobEnv) {
			var envEv []string
			fs, envEv = knobEnv(env, others, key, d, ob.users, u, readers)
			ev = append(ev, envEv...)
		}
		if o.on(KnobUnused) {
			f, groupEv := unused.judge(key)
			fs = append(fs, f...)
			ev = append(ev, groupEv...)
		}
		ev = append([]string{fmt.Sprintf("%s (%s, applied by %s): %d knob(s) %s; substituted from by %s", key, d.Location, orRoot(d.AppliedBy), len(keys), strings.Join(keys, ", "), users)}, ev...)
		if d.Encrypted {
			ev = append(ev, "SOPS-encrypted: its keys count as defined; values are not read")
		}
		out = append(out, ch.verdict(def, fs, fmt.Sprintf("%s is rendered, its %d knob(s) agree across %d other environment(s) where both read them, and are used", key, len(keys), len(others)), ev...))
	}
	if len(out) == 0 {
		out = append(out, Knobs.Pass("no Kustomization substitutes from a ConfigMap or Secret"))
	}
	return out
}

// otherSourceKs are the Kustomizations of the environment that read
// another source than the root's (another repository: their paths were not
// built here), which may render what no built path does.
type otherSourceKs []*fluxrepo.Kustomization

func otherSourceKustomizations(env *fluxrepo.Env) otherSourceKs {
	if env.Root == nil {
		return nil
	}
	var out otherSourceKs
	for _, k := range env.Kustomizations {
		// One whose source nothing renders never applies anything.
		if !k.Built && k.Err == nil && k.Via == "" && k.SourceKey() != env.Root.SourceKey() && env.SourceOf(k) != nil {
			out = append(out, k)
		}
	}
	return out
}

// names are the Kustomizations by source, the first few of each.
func (ks otherSourceKs) names() string {
	var srcs []string
	by := map[string][]string{}
	for _, k := range ks {
		src := k.SourceKey()
		if by[src] == nil {
			srcs = append(srcs, src)
		}
		by[src] = append(by[src], k.Ref())
	}
	var s []string
	for _, src := range srcs {
		s = append(s, fmt.Sprintf("%s (%s)", namedFew(by[src]), src))
	}
	return strings.Join(s, "; ")
}

func namedFew(names []string) string {
	if len(names) > 3 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
	}
	return strings.Join(names, ", ")
}

// say is what a prerequisite's finding adds about them ("" when none).
func (ks otherSourceKs) say() string {
	if len(ks) == 0 {
		return ""
	}
	return "; Kustomization(s) of another source, not built here, may render it: " + ks.names()
}

// prereqCause is the cause every prerequisite finding shares.
func prereqCause(env *fluxrepo.Env, others otherSourceKs) string {
	s := fmt.Sprintf("prerequisites: substituted from, and no Kustomization of %s renders them; each must exist before its readers reconcile, or the controller fails them (substitute from … error: not found)", env.Options.Path)
	if len(others) > 0 {
		s += "; Kustomization(s) of another source, not built here, may render them: " + others.names()
	}
	return s
}

func d2name(key string) string {
	parts := strings.SplitN(key, "/", 3)
	return parts[len(parts)-1]
}

func keyLine(env *fluxrepo.Env, d *fluxrepo.Data, key string) fluxrepo.Location {
	if d.Location.File == "" {
		return d.Location
	}
	// The key of its data (stringData: a Secret's), as the YAML node has
	// it; the object's location when the key is not written there (a
	// generator's source file).
	if l := fieldLocation(env, d.Location, "data", key); l != d.Location {
		return l
	}
	return fieldLocation(env, d.Location, "stringData", key)
}

func orRoot(appliedBy string) string {
	if appliedBy == "" {
		return "no Kustomization (only the root directory renders it)"
	}
	return "Kustomization " + appliedBy
}

// knobReaders is, for one environment, the names each built Kustomization
// substituting from key uses, by name: name -> reader refs. Cached per
// environment and key in cache.
func knobReaders(env *fluxrepo.Env, key string, cache map[*fluxrepo.Env]map[string]map[string]bool) map[string][]string {
	if cache[env] == nil {
		cache[env] = map[string]map[string]bool{}
	}
	out := map[string][]string{}
	for _, k := range env.Kustomizations {
		if !k.Built || !k.Substitutes() || !slices.ContainsFunc(k.Spec.PostBuild.SubstituteFrom, func(r kustomizev1.SubstituteReference) bool {
			return fluxrepo.DataKey(r.Kind, k.Namespace, r.Name) == key
		}) {
			continue
		}
		names := cache[env][k.Ref()]
		if names == nil {
			names = usedNames(k)
			cache[env][k.Ref()] = names
		}
		for n := range names {
			out[n] = append(out[n], k.Ref())
		}
	}
	return out
}

// usedNames are the variables k's objects use in any ${…} form, as the
// substitution pass records them (substitution.expression).
func usedNames(k *fluxrepo.Kustomization) map[string]bool {
	out := map[string]bool{}
	for _, r := range k.Resources {
		if fluxrepo.SubstitutionDisabled(r) {
			continue
		}
		y, err := r.AsYAML()
		if err != nil || !strings.Contains(string(y), "${") {
			continue
		}
		tree, perr := parse.Parse(string(y))
		nodes, _ := funcNodes(string(y), tree, perr)
		for _, n := range nodes {
			out[n.Param] = true
		}
	}
	return out
}

// unusedJudge judges unused knobs per source: the copies of one source
// file (a component's shared settings ConfigMap applied into many
// namespaces, each substituted from by that namespace's Kustomizations)
// are judged together, and reported once, on the first copy's check.
type unusedJudge struct {
	env *fluxrepo.Env
	// group: object key -> the keys of the copies of its source (itself
	// included, sorted); found: owner key -> its findings.
	group map[string][]string
	found map[string][]finding
	notes map[string][]string
}

// unusedKnobs judges every object of keys (sorted) read by the
// Kustomizations readersOf names (users, and those whose paths were not
// built).
func unusedKnobs(env *fluxrepo.Env, u usage, readersOf func(string) (users, unread []string), keys []string) *unusedJudge {
	j := &unusedJudge{env: env, group: map[string][]string{}, found: map[string][]finding{}, notes: map[string][]string{}}
	bySource := map[string][]string{}
	var order []string
	for _, key := range keys {
		d := env.Data[key]
		if d == nil {
			continue
		}
		// One source: the same kind and name declared at the same place
		// (a copy per namespace).
		src := key
		if d.Location.File != "" {
			src = d.Kind + "/" + d.Name + "@" + d.Location.String()
		}
		if bySource[src] == nil {
			order = append(order, src)
		}
		bySource[src] = append(bySource[src], key)
	}
	for _, src := range order {
		copies := bySource[src]
		for _, key := range copies {
			j.group[key] = copies
		}
		owner := copies[0]
		var users, unread []string
		defined := map[string]bool{}
		for _, key := range copies {
			us, un := readersOf(key)
			users, unread = append(users, us...), append(unread, un...)
			for k := range env.Data[key].Values {
				defined[k] = true
			}
		}
		if len(unread) > 0 {
			j.notes[owner] = append(j.notes[owner], "unused knobs not judged: the paths of "+strings.Join(unread, ", ")+" were not built, so the names they use are unknown")
			continue
		}
		d := env.Data[owner]
		what := owner
		if len(copies) > 1 {
			what = fmt.Sprintf("%s (%d copies: %s)", d.Location.File, len(copies), listSome(copies, 3))
		}
		var none []string
		for _, k := range slices.Sorted(maps.Keys(defined)) {
			if !slices.ContainsFunc(users, func(by string) bool { return u.names[by][k] }) {
				none = append(none, k)
			}
		}
		// One advisory per source, naming every unused key, at the first.
		switch {
		case len(none) == 1:
			j.found[owner] = []finding{at(keyLine(env, d, none[0]), verify.Finding{Detector: KnobUnused, Verdict: verify.Warn,
				Message: fmt.Sprintf("knob %s of %s is referenced by none of the Kustomizations substituting from it (%s)", none[0], what, listSome(slices.Compact(slices.Sorted(slices.Values(users))), 5)),
				Fix:     "remove it, or use it as ${" + none[0] + "}"})}
		case len(none) > 1:
			j.found[owner] = []finding{at(keyLine(env, d, none[0]), verify.Finding{Detector: KnobUnused, Verdict: verify.Warn,
				Message: fmt.Sprintf("%d knobs of %s are referenced by none of the Kustomizations substituting from it (%s): %s", len(none), what, listSome(slices.Compact(slices.Sorted(slices.Values(users))), 5), strings.Join(none, ", ")),
				Fix:     "remove them, or use them as ${NAME}"})}
		}
	}
	return j
}

// judge is the findings reported on key's check, and its evidence.
func (j *unusedJudge) judge(key string) ([]finding, []string) {
	copies := j.group[key]
	if len(copies) == 0 {
		return nil, nil
	}
	owner := copies[0]
	var ev []string
	if len(copies) > 1 {
		ev = append(ev, fmt.Sprintf("one of %d copies of %s (%s): unused knobs are judged across the readers of every copy, and reported once, on check.knobs/%s", len(copies), j.env.Data[key].Location, listSome(copies, 3), owner))
	}
	ev = append(ev, j.notes[owner]...)
	if key != owner {
		return nil, ev
	}
	return j.found[owner], ev
}

// listSome joins the first n of items, saying how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
