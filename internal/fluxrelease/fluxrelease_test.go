package fluxrelease

import (
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/versions"
)

// TestResolve: how one declaration maps to an embedded release. A range is
// the Flux Operator's rule (flux-operator v0.58.1
// internal/controller/fluxinstance_controller.go build, calling
// internal/builder/semver.go MatchVersionWithEmbedded since v0.54.0: the
// newest release matching the Masterminds constraint, of a Flux minor the
// running operator's image embeds — that cap is a note, the image unknown),
// capped by what an operator artifact ships; a range the operator cannot
// parse, or no release satisfies, is the operator's refusal (flux-operator
// v0.59.0 internal/builder/semver.go matchVersions: semver.NewConstraint,
// "semver '<range>' parse error: …"; MatchVersionWithEmbedded: "no match
// found for semver"); an exact release not embedded is judged by its
// minor's newest embedded release (issue 45: v2.2.2 by v2.2.3), else by
// the nearest embedded one below it; below every embedded minor is Old; a
// value still holding a variable is not resolved.
func TestResolve(t *testing.T) {
	t.Parallel()
	pins, err := versions.Load()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Default: pins.FluxVersion, Embedded: pins.EmbeddedFluxVersions, OperatorMaxFlux: pins.OperatorMaxFlux}
	for _, tc := range []struct {
		d       declaration
		version string
		old     bool
		note    string
	}{
		{d: declaration{value: "2.x", rangeOf: true}, version: "v2.9.5"},
		{d: declaration{value: "2.7.x", rangeOf: true}, version: "v2.7.5"},
		{d: declaration{value: ">=2.3.0 <2.5.0", rangeOf: true}, version: "v2.4.0"},
		{d: declaration{value: "2.x", rangeOf: true, maxFlux: o.OperatorMaxFlux["v0.46.0"]}, version: "v2.8.5"},
		{d: declaration{value: "*", rangeOf: true, maxFlux: o.OperatorMaxFlux["v0.59.0"]}, version: "v2.9.5"},
		// Review item 3: the artifact ships no 2.9: the operator fails it.
		{d: declaration{value: "2.9.x", rangeOf: true, maxFlux: o.OperatorMaxFlux["v0.46.0"], artifact: "v0.46.0", operator: true}, note: "flux-operator-manifests:v0.46.0 ships Flux up to v2.8.5"},
		{d: declaration{value: "2.10.x", rangeOf: true, maxFlux: o.OperatorMaxFlux["v0.46.0"], artifact: "v0.46.0", operator: true}, note: "no match found for semver"},
		{d: declaration{value: "2.1.x", rangeOf: true}, old: true},
		{d: declaration{value: "0.x", rangeOf: true}, old: true},
		{d: declaration{value: "3.x", rangeOf: true}, note: "no embedded release matches it"},
		{d: declaration{value: "two", rangeOf: true}, note: `fails the OCIRepository ("semver 'two' parse error: improper constraint: "two"")`},
		// Issue 45 item 7: the Flux Operator refuses a range it cannot
		// parse, with the Masterminds library's words.
		{d: declaration{value: ">=2.3 <2.0 || &&", rangeOf: true, operator: true}, note: `semver '>=2.3 <2.0 || &&' parse error: improper constraint: " &&"`},
		{d: declaration{value: "two", rangeOf: true, operator: true}, note: `parse error: improper constraint: "two"`},
		// It parses, no release satisfies it: "no match found".
		{d: declaration{value: ">=2.3 <2.0", rangeOf: true, operator: true}, note: "no match found for semver: >=2.3 <2.0"},
		{d: declaration{value: ">=2.3 <2.0", rangeOf: true}, note: "no release at all satisfies the range"},
		{d: declaration{value: "~2.3 >=2.4", rangeOf: true, operator: true}, note: "no match found for semver"},
		{d: declaration{value: "^2.3 >=2.12", rangeOf: true, operator: true}, note: "no embedded release matches it"},
		// Parses and some release satisfies it, none embedded: today's
		// warning (the running operator may have it).
		{d: declaration{value: "3.x", rangeOf: true, operator: true}, note: "no embedded release matches it"},
		// A variable left as written: not resolved, said why.
		{d: declaration{value: "${FLUX_VERSION}", rangeOf: true, operator: true, unresolved: "it holds a variable"}, note: "it holds a variable"},
		{d: declaration{value: "${FLUXCD_VERSION:=v2.8.5}", unresolved: "it holds a variable"}, note: "it holds a variable"},
		{d: declaration{value: "v2.4.0"}, version: "v2.4.0"},
		{d: declaration{value: "2.4.0"}, version: "v2.4.0"},
		// Issue 45 item 3: of an embedded minor, its newest release.
		{d: declaration{value: "v2.8.4"}, version: "v2.8.8", note: "the newest embedded release of Flux 2.8"},
		{d: declaration{value: "v2.2.2"}, version: "v2.2.3", note: "judged by v2.2.3, the newest embedded release of Flux 2.2"},
		{d: declaration{value: "v2.2.0"}, version: "v2.2.3", note: "the newest embedded release of Flux 2.2"},
		{d: declaration{value: "v2.9.6"}, version: "v2.9.5", note: "the newest embedded release of Flux 2.9"},
		{d: declaration{value: "v2.10.0"}, version: "v2.9.5", note: "nor any release of Flux 2.10: judged by v2.9.5, the nearest embedded release below it"},
		// Review item 13: the same minor of another major is no kin:
		// v3.2.0 is judged by the newest below it, v2.9.5, not v2.2.3.
		{d: declaration{value: "v3.2.0"}, version: "v2.9.5", note: "nearest embedded release below it"},
		{d: declaration{value: "v0.41.2"}, old: true},
		{d: declaration{value: "v2.1.9"}, old: true},
		{d: declaration{value: "main"}, note: "not a release version"},
	} {
		v, old, note := tc.d.resolve(o)
		if v != tc.version || old != tc.old || !strings.Contains(note, tc.note) || (tc.note == "" && note != "") {
			t.Errorf("%+v: got %q old %t note %q; want %q old %t note %q", tc.d, v, old, note, tc.version, tc.old, tc.note)
		}
	}
	// The table holds what the brief and the operator's tags say.
	for op, flux := range map[string]string{"v0.46.0": "v2.8.5", "v0.59.0": "v2.9.5", "v0.9.0": "v2.3.0"} {
		if o.OperatorMaxFlux[op] != flux {
			t.Errorf("FLUX_OPERATOR_MAX_FLUX[%s] = %q, want %s", op, o.OperatorMaxFlux[op], flux)
		}
	}
}

// TestRefusal: what the Flux Operator refuses of a FluxInstance range
// (flux-operator v0.59.0 internal/builder/semver.go matchVersions:
// semver.NewConstraint, "semver '<range>' parse error: …";
// MatchVersionWithEmbedded: "no match found for semver"). A value holding a
// variable is refused only when the cluster gets it as written (a
// Kustomization without postBuild applies it); read from a file applied
// outside the repository's Kustomizations it is not known. Not the
// operator's (an OCIRepository or GitRepository ref.semver):
// source-controller refuses only a range it cannot parse (sourceRefusal).
func TestRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    declaration
		want string // "": none
	}{
		{declaration{value: "${FLUX_VERSION}", rangeOf: true, operator: true, unresolved: "it holds a variable", literal: true}, `semver '${FLUX_VERSION}' parse error: improper constraint: "${FLUX_VERSION}"`},
		{declaration{value: "${FLUX_VERSION}", rangeOf: true, operator: true, unresolved: "it holds a variable"}, ""},
		{declaration{value: ">=2.3 <2.0 || &&", rangeOf: true, operator: true}, `semver '>=2.3 <2.0 || &&' parse error: improper constraint: " &&"`},
		{declaration{value: ">=2.3 <2.0 || &&", rangeOf: true, form: FormOCIManifests}, `fails the OCIRepository ("semver '>=2.3 <2.0 || &&' parse error: improper constraint: " &&"")`},
		{declaration{value: ">=2.3 <2.0 || &&", rangeOf: true, form: FormGitFlux2}, `fails the GitRepository ("semver parse error: improper constraint: " &&"")`},
		{declaration{value: ">=2.3 <2.0", rangeOf: true, form: FormOCIManifests}, ""}, // the registry's tags are not known offline
		{declaration{value: "${FLUX_VERSION}", rangeOf: true, form: FormOCIManifests, unresolved: "it holds a variable"}, ""},
		{declaration{value: ">=2.3 <2.0", rangeOf: true, operator: true}, "no match found for semver: >=2.3 <2.0"},
		{declaration{value: "2.x", rangeOf: true, operator: true}, ""},
		{declaration{value: "3.x", rangeOf: true, operator: true}, ""},
		{declaration{value: "2.9.x", rangeOf: true, operator: true, maxFlux: "v2.8.5", artifact: "v0.46.0"}, "ships Flux up to v2.8.5"},
	} {
		got := tc.d.refusal()
		if (tc.want == "") != (got == refusal{}) || !strings.Contains(got.why, tc.want) {
			t.Errorf("%q (operator %t, literal %t): got %+v; want %q", tc.d.value, tc.d.operator, tc.d.literal, got, tc.want)
		}
		if got.why != "" && got.fix == "" {
			t.Errorf("%q: a refusal without a fix", tc.d.value)
		}
	}
}
