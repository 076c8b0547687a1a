package check

import (
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// [literal] of an object whose Kustomization substitutes from nothing:
// every ${…} a program reads ships as written.
func TestLiterals(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: apps}\ndata:\n"
	for _, tc := range []struct {
		name, obj string
		off       bool
		want      []verdictText
	}{
		{name: "none", obj: head + "  a: b\n"},
		{name: "one", obj: head + "  a: ${A}\n",
			want: warning("${A} in ConfigMap/apps/conf: Kustomization flux-system/apps substitutes from the test's variables (no variables), so nothing is substituted and it ships literally")},
		{name: "each once", obj: head + "  a: ${A}\n  b: ${B:-x} ${A}\n",
			want: []verdictText{{verify.Warn, "${A} in"}, {verify.Warn, "${B:-…} in"}}},
		{name: "escaped", obj: head + "  a: $${A}\n"},
		{name: "on a commented-out line", obj: head + "  app.conf: |\n    # ${A}\n    port = 80\n"},
		{name: "off", obj: head + "  a: ${A}\n", off: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(nil, true)
			if tc.off {
				s.o.Disable = map[verify.Detector]bool{Literal: true}
			}
			r := object(t, tc.obj)
			y, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			wantFindings(t, s.literals(r, string(y)), Literal, appsAt, tc.want...)
		})
	}
}

// [literal] of an object of a Kustomization without postBuild: only a
// knob of the environment is named.
func TestKnobLiterals(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: apps"
	knobs := map[string]string{"ZONE": "spec.postBuild.substitute of Kustomization flux-system/infra"}
	for _, tc := range []struct {
		name, obj string
		off       bool
		want      []verdictText
	}{
		{name: "a knob", obj: head + "}\ndata:\n  zone: ${ZONE}\n",
			want: warning("${ZONE} in ConfigMap/apps/conf: Kustomization flux-system/apps has no postBuild, so it ships literally, though ZONE is a knob of the environment (spec.postBuild.substitute of Kustomization flux-system/infra)")},
		{name: "not a knob: meant so", obj: head + "}\ndata:\n  home: ${HOME}\n"},
		{name: "substitution disabled", obj: head + ", labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}}\ndata:\n  zone: ${ZONE}\n"},
		{name: "a CRD's description", obj: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object, description: \"set ${ZONE}\"}\n"},
		{name: "off", obj: head + "}\ndata:\n  zone: ${ZONE}\n", off: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(nil, true)
			if tc.off {
				s.o.Disable = map[verify.Detector]bool{Literal: true}
			}
			wantFindings(t, knobLiterals(s.o, s.env, s.k, object(t, tc.obj), knobs), Literal, appsAt, tc.want...)
		})
	}
}
