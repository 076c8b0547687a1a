package check

import (
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// [literal] of an object whose Kustomization substitutes from nothing:
// every ${…} a program reads ships as written.
func TestLiterals(t *testing.T) {
	t.Parallel()
	for _, tc := range []objectCase{
		{name: "none", obj: conf + "  a: b\n"},
		{name: "one", obj: conf + "  a: ${A}\n",
			want: warning("${A} in ConfigMap/apps/conf: Kustomization flux-system/apps substitutes from the test's variables (no variables), so nothing is substituted and it ships literally")},
		{name: "each once", obj: conf + "  a: ${A}\n  b: ${B:-x} ${A}\n",
			want: []verdictText{{verify.Warn, "${A} in"}, {verify.Warn, "${B:-…} in"}}},
		{name: "escaped", obj: conf + "  a: $${A}\n"},
		{name: "on a commented-out line", obj: conf + "  app.conf: |\n    # ${A}\n    port = 80\n"},
		{name: "off", obj: conf + "  a: ${A}\n", off: Literal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(nil, true, tc.off)
			r, y := objectText(t, tc.obj)
			wantFindings(t, s.literals(r, y), Literal, appsAt, tc.want...)
		})
	}
}

// [literal] of an object of a Kustomization without postBuild: only a
// knob of the environment is named.
func TestKnobLiterals(t *testing.T) {
	t.Parallel()
	knobs := map[string]string{"ZONE": "spec.postBuild.substitute of Kustomization flux-system/infra"}
	for _, tc := range []objectCase{
		{name: "a knob", obj: conf + "  zone: ${ZONE}\n",
			want: warning("${ZONE} in ConfigMap/apps/conf: Kustomization flux-system/apps has no postBuild, so it ships literally, though ZONE is a knob of the environment (spec.postBuild.substitute of Kustomization flux-system/infra)")},
		{name: "not a knob: meant so", obj: conf + "  home: ${HOME}\n"},
		{name: "substitution disabled", obj: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: apps, labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}}\ndata:\n  zone: ${ZONE}\n"},
		{name: "a CRD's description", obj: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object, description: \"set ${ZONE}\"}\n"},
		{name: "off", obj: conf + "  zone: ${ZONE}\n", off: Literal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(nil, true, tc.off)
			wantFindings(t, knobLiterals(s.o, s.env, s.k, object(t, tc.obj), knobs), Literal, appsAt, tc.want...)
		})
	}
}
