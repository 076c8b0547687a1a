package patches

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// GateFeatureGates proves every --feature-gates name the render passes to
// a Flux controller is one that controller version supports.
var GateFeatureGates = verify.Def{ID: "overlay.feature-gates", Phase: PhaseName, Stage: verify.Before, Title: "every feature gate set is one the controller supports", Optional: true}

// featureGates checks the explicit --feature-gates of every rendered Flux
// controller against its version's gates: an unsupported name makes the
// controller exit at start-up (fluxcd/pkg/runtime/features
// SupportedFeatures: "feature-gate '%s' not supported"; main.go os.Exit(1)),
// so the rollout would never finish. A version whose gates are not
// recorded is a skip naming it; a render that sets no gate passes.
func featureGates(final []appsv1.Deployment) verify.Check {
	c := GateFeatureGates.New()
	var bad, unknown, set []string
	for i := range final {
		d := &final[i]
		mc := ManagerContainer(d.Spec.Template.Spec.Containers)
		f, err := ParseArgs(mc.Args)
		if err != nil {
			// The controller's flag parsing refuses it (the same
			// MapStringBool): it exits before it starts.
			bad = append(bad, fmt.Sprintf("Deployment/%s/%s container %s: %v", d.Namespace, d.Name, mc.Name, err))
			continue
		}
		if len(f.FeatureGates) == 0 {
			continue
		}
		version := ImageVersion(mc.Image)
		g := SupportedGates(d.Name, version)
		names := slices.Sorted(maps.Keys(f.FeatureGates))
		if !g.Known {
			unknown = append(unknown, fmt.Sprintf("%s %s (%s)", d.Name, orNone(version), strings.Join(names, ", ")))
			continue
		}
		if g.AnyName {
			for _, n := range names {
				set = append(set, fmt.Sprintf("%s %s: %s=%t (this version accepts any gate name and reads none)", d.Name, version, n, f.FeatureGates[n]))
			}
			continue
		}
		for _, n := range names {
			def, ok := g.Defaults[n]
			if !ok {
				msg := fmt.Sprintf("Deployment/%s/%s: %s %s does not support feature gate %q and exits at start-up (\"feature-gate '%s' not supported\")", d.Namespace, d.Name, d.Name, version, n, n)
				if s := closest(n, g.Defaults); s != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				}
				bad = append(bad, msg)
				continue
			}
			set = append(set, fmt.Sprintf("%s %s: %s=%t (default %t)", d.Name, version, n, f.FeatureGates[n], def))
		}
	}
	c.Evidence = set
	switch {
	case len(bad) > 0:
		c.Verdict = verify.Fail
		c.Message = strings.Join(bad, "; ") + "; fix the gate's name in the overlay that sets it (the controller's internal/features lists its gates)"
	case len(unknown) > 0:
		c.Verdict = verify.Skip
		c.Message = "the feature gates of " + strings.Join(unknown, "; ") + " are not recorded in this build (hack/gengates could read neither that controller version's git tag nor its module), so their names are not checked"
	case len(set) == 0:
		c.Verdict = verify.Pass
		c.Message = "no --feature-gates set: every controller runs its version's defaults"
	default:
		c.Verdict = verify.Pass
		c.Message = fmt.Sprintf("%d feature gate setting(s), each one its controller version accepts", len(set))
	}
	return c
}

// closest is the supported gate name is most likely a misspelling of:
// equal but for case, or one a prefix of the other ("StrictPostBuild
// Substitution" for StrictPostBuildSubstitutions); "" when none is.
func closest(name string, gates map[string]bool) string {
	l := strings.ToLower(name)
	var out []string
	for g := range gates {
		lg := strings.ToLower(g)
		if lg == l || strings.HasPrefix(lg, l) || strings.HasPrefix(l, lg) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " or ")
}
