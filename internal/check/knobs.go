package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/gate"
)

// checkKnobs is one check.knobs/<Kind>/<ns>/<name> per object some
// Kustomization substitutes from.
func checkKnobs(ch *checker, o Options, env *fluxrepo.Env, others map[string]*fluxrepo.Env, u usage) []gate.Check {
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
	var out []gate.Check
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
				out = append(out, ch.verdict(def, nil, fmt.Sprintf("%s is a declared prerequisite: %s; %s; substituted from by %s", key, pd.MadeBy, keys, users)))
				continue
			}
			var fs []finding
			if o.on(Prerequisite) && !ob.optional {
				// Made outside the environment (out of band at bootstrap,
				// by another tool): a prerequisite, not a defect offline;
				// the live gates require it, with these keys.
				need := map[string]bool{}
				for _, by := range ob.users {
					maps.Copy(need, u.assumed[by])
				}
				keys := "no key the repository shows"
				if len(need) > 0 {
					keys = "keys " + strings.Join(slices.Sorted(maps.Keys(need)), ", ")
				}
				kind, _, _ := strings.Cut(key, "/")
				loc := env.FindLine([]string{ob.first.Location.File}, "", "name: "+d2name(key))
				if loc.File == "" {
					loc = ob.first.Location // the reference came from a patch
				}
				fs = append(fs, finding{det: Prerequisite, name: key, warn: true, loc: loc,
					what: fmt.Sprintf("prerequisite %s (%s used) is substituted from by %s and no Kustomization of %s renders it: it must exist before they reconcile, or the controller fails them with \"substitute from '%s/%s' error: not found\"", key, keys, users, env.Options.Path, kind, d2name(key)),
					fix:  fmt.Sprintf("create %s out of band before bootstrap (or render it, e.g. as an ExternalSecret or a SOPS Secret, in a Kustomization they depend on); mark the reference optional: true if it may be absent", key)})
			}
			out = append(out, ch.verdict(def, fs, fmt.Sprintf("%s is not rendered, and every reference (%s) is optional: substitution proceeds without it", key, users)))
			continue
		}
		var fs []finding
		keys := slices.Sorted(maps.Keys(d.Values))
		if o.on(KnobEnv) {
			for _, p := range slices.Sorted(maps.Keys(others)) {
				od := others[p].Data[key]
				if od == nil {
					continue // the other environment's own check reports it
				}
				for _, k := range keys {
					if _, ok := od.Values[k]; !ok {
						fs = append(fs, finding{det: KnobEnv, loc: keyLine(env, d, k),
							what: fmt.Sprintf("knob %s of %s is defined in %s but not in %s (%s)", k, key, env.Options.Path, p, od.Location),
							fix:  fmt.Sprintf("define %s in %s too (or remove it here): a shared path using it fails or takes a default there", k, od.Location.File)})
					}
				}
				for _, k := range slices.Sorted(maps.Keys(od.Values)) {
					if _, ok := d.Values[k]; !ok {
						fs = append(fs, finding{det: KnobEnv, loc: d.Location,
							what: fmt.Sprintf("knob %s of %s is defined in %s (%s) but not in %s", k, key, p, keyLine(others[p], od, k), env.Options.Path),
							fix:  fmt.Sprintf("define %s in %s too (or remove it there)", k, d.Location.File)})
					}
				}
			}
		}
		if o.on(KnobUnused) && len(ob.unread) == 0 {
			for _, k := range keys {
				used := false
				for _, by := range ob.users {
					used = used || u.names[by][k]
				}
				if !used {
					fs = append(fs, finding{det: KnobUnused, warn: true, loc: keyLine(env, d, k),
						what: fmt.Sprintf("knob %s of %s is referenced by none of the Kustomizations substituting from it (%s)", k, key, users),
						fix:  "remove it, or use it as ${" + k + "}"})
				}
			}
		}
		ev := []string{fmt.Sprintf("%s (%s, applied by %s): %d knob(s) %s; substituted from by %s", key, d.Location, orRoot(d.AppliedBy), len(keys), strings.Join(keys, ", "), users)}
		if len(ob.unread) > 0 {
			ev = append(ev, "unused knobs not judged: the paths of "+strings.Join(ob.unread, ", ")+" were not built, so the names they use are unknown")
		}
		if d.Encrypted {
			ev = append(ev, "SOPS-encrypted: its keys count as defined; values are not read")
		}
		out = append(out, ch.verdict(def, fs, fmt.Sprintf("%s is rendered, its %d knob(s) agree across %d other environment(s) and are used", key, len(keys), len(others)), ev...))
	}
	if len(out) == 0 {
		out = append(out, Knobs.Pass("no Kustomization substitutes from a ConfigMap or Secret"))
	}
	return out
}

func d2name(key string) string {
	parts := strings.SplitN(key, "/", 3)
	return parts[len(parts)-1]
}

func keyLine(env *fluxrepo.Env, d *fluxrepo.Data, key string) fluxrepo.Location {
	if d.Location.File == "" {
		return d.Location
	}
	if l := env.FindLine([]string{d.Location.File}, "", key+":"); l.File != "" {
		return l
	}
	return d.Location
}

func orRoot(appliedBy string) string {
	if appliedBy == "" {
		return "no Kustomization (only the root directory renders it)"
	}
	return "Kustomization " + appliedBy
}
