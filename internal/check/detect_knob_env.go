package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detKnobEnv is the [knob-env] row of the table of detectors.
var detKnobEnv = detector{ID: KnobEnv, Gate: Knobs, Advisory: true,
	Short:   "substituteFrom knob defined in one environment only",
	Rule:    "kustomize-controller v1.9.5 reads spec.postBuild.substituteFrom per cluster (fluxcd/pkg/kustomize LoadVariables): a knob missing in one environment is undefined there",
	Emitted: "knobEnv",
}

// knobEnv compares the keys of d (key, read by users here) with the same
// object in the other environments: an advisory, no controller's verdict
// (each environment's own substitution check reports what its controller
// would say of a name it lacks). A key is compared only with an
// environment where a Kustomization substituting from the object uses it
// too: a cluster of another role that never renders the readers of a knob
// need not define it.
func knobEnv(env *fluxrepo.Env, others map[string]*fluxrepo.Env, key string, d *fluxrepo.Data, users []string, u usage, readers map[*fluxrepo.Env]map[string]map[string]bool) ([]finding, []string) {
	here := map[string][]string{} // knob -> readers here using it
	for _, by := range users {
		for n := range u.names[by] {
			here[n] = append(here[n], by)
		}
	}
	var fs []finding
	var ev []string
	for _, p := range slices.Sorted(maps.Keys(others)) {
		od := others[p].Data[key]
		if od == nil {
			continue // the other environment's own check reports it
		}
		there := knobReaders(others[p], key, readers)
		var skipped []string
		for _, k := range slices.Sorted(maps.Keys(d.Values)) {
			if _, ok := od.Values[k]; ok || od.Open {
				continue
			}
			if len(here[k]) == 0 || len(there[k]) == 0 {
				skipped = append(skipped, k)
				continue
			}
			fs = append(fs, at(keyLine(env, d, k), verify.Finding{Detector: KnobEnv, Verdict: verify.Warn,
				Message: fmt.Sprintf("knob %s of %s is defined in %s but not in %s (%s), where Kustomization %s reads ${%s} too: there it takes its default or is undefined (that environment's check says which)", k, key, env.Options.Path, p, od.Location, strings.Join(there[k], ", "), k),
				Fix:     fmt.Sprintf("define %s in %s too if %s should get a value of its own", k, od.Location.File, p)}))
		}
		for _, k := range slices.Sorted(maps.Keys(od.Values)) {
			if d.Defines(k) {
				continue
			}
			if len(here[k]) == 0 || len(there[k]) == 0 {
				skipped = append(skipped, k)
				continue
			}
			fs = append(fs, at(d.Location, verify.Finding{Detector: KnobEnv, Verdict: verify.Warn,
				Message: fmt.Sprintf("knob %s of %s is defined in %s (%s) but not in %s, where Kustomization %s reads ${%s} too: here it takes its default or is undefined (check.substitution says which)", k, key, p, keyLine(others[p], od, k), env.Options.Path, strings.Join(here[k], ", "), k),
				Fix:     fmt.Sprintf("define %s in %s too if %s should get a value of its own", k, d.Location.File, env.Options.Path)}))
		}
		if len(skipped) > 0 {
			slices.Sort(skipped)
			ev = append(ev, fmt.Sprintf("not compared with %s: %s (defined in one environment only, and no Kustomization of the other substituting from %s uses it)", p, strings.Join(slices.Compact(skipped), ", "), key))
		}
	}
	return fs, ev
}
