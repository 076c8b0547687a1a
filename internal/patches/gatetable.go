package patches

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// gateTable is every feature gate, with its default, of each Flux
// controller version the embedded release bundles deploy, read from the
// controllers' own internal/features at the version's git tag or Go module
// (hack/gengates). A version neither could be read for is recorded
// "unavailable".
//
//go:embed gatedefaults.txt
var gateTable string

// ControllerGates are the feature gates a controller version supports.
type ControllerGates struct {
	// Known is false when the version's gates could not be read (neither
	// its tag nor its module could be, or the version is not one the
	// bundles deploy).
	Known bool
	// AnyName is true for a version that parses --feature-gates but never
	// declares its supported features (fluxcd/pkg/runtime/features
	// SupportedFeatures is never called, source-watcher v2.0.x): it
	// neither refuses nor reads any name, and Defaults is empty.
	AnyName bool
	// Defaults maps each supported gate to its default.
	Defaults map[string]bool
}

var parsedGates = sync.OnceValue(func() map[string]ControllerGates {
	out := map[string]ControllerGates{}
	for _, line := range strings.Split(gateTable, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			panic(fmt.Sprintf("gatedefaults.txt: malformed line %q", line))
		}
		key := f[0] + "@" + f[1]
		switch f[2] {
		case "unavailable":
			out[key] = ControllerGates{}
			continue
		case "none":
			out[key] = ControllerGates{Known: true, Defaults: map[string]bool{}}
			continue
		case "unchecked":
			out[key] = ControllerGates{Known: true, AnyName: true, Defaults: map[string]bool{}}
			continue
		}
		g := ControllerGates{Known: true, Defaults: map[string]bool{}}
		for _, kv := range strings.Split(f[2], ",") {
			name, v, _ := strings.Cut(kv, "=")
			g.Defaults[name] = v == "true"
		}
		out[key] = g
	}
	return out
})

// SupportedGates are the feature gates of controller at version (Known false when
// not recorded).
func SupportedGates(controller, version string) ControllerGates {
	return parsedGates()[controller+"@"+version]
}

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
		mc := managerContainer(d.Spec.Template.Spec.Containers)
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
