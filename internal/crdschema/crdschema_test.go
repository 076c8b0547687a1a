package crdschema

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const ks = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`

const hr = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: podinfo
`

// TestValidate: objects of Flux v2.9.5's kinds as its CRDs judge them on
// create. Each case breaks one thing the API server refuses (the schema's
// types, required fields, enums, the x-kubernetes-validations rules, the
// served versions) or drops (an unknown field), next to the object as
// written, which passes.
func TestValidate(t *testing.T) {
	v, err := ForFlux("v2.9.5")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc    string
		errs         string // a substring of the errors; "" means none
		dropped      string
		unknownGroup bool
	}{
		{name: "Kustomization as written", doc: ks},
		{name: "HelmRelease as written", doc: hr},
		{name: "interval as a number", doc: strings.Replace(ks, "interval: 10m", "interval: 10", 1), errs: "spec.interval: Invalid value: \"integer\": spec.interval in body must be of type string"},
		{name: "interval not a duration", doc: strings.Replace(ks, "interval: 10m", "interval: ten minutes", 1), errs: "spec.interval"},
		{name: "prune as a string", doc: strings.Replace(ks, "prune: true", "prune: \"true\"", 1), errs: "spec.prune in body must be of type boolean"},
		{name: "no sourceRef", doc: strings.Split(ks, "  sourceRef:")[0], errs: "spec.sourceRef: Required value"},
		{name: "sourceRef kind not a source", doc: strings.Replace(ks, "kind: GitRepository", "kind: GitRepo", 1), errs: "spec.sourceRef.kind: Unsupported value: \"GitRepo\""},
		{name: "neither chart nor chartRef (CEL rule)", doc: strings.Split(hr, "  chartRef:")[0], errs: "either chart or chartRef must be set"},
		{name: "an unknown field is dropped", doc: ks + "  prun: false\n", dropped: "spec.prun"},
		{name: "a version no longer served", doc: strings.Replace(ks, "kustomize.toolkit.fluxcd.io/v1", "kustomize.toolkit.fluxcd.io/v1beta1", 1), errs: "apiVersion: Unsupported value: \"kustomize.toolkit.fluxcd.io/v1beta1\""},
		{name: "a name the API refuses", doc: strings.Replace(ks, "name: apps", "name: Apps_1", 1), errs: "metadata.name: Invalid value: \"Apps_1\""},
		{name: "not a Flux group", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", unknownGroup: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Through JSON, as the API server decodes it (integers int64).
			j, err := yaml.YAMLToJSON([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(j); err != nil {
				t.Fatal(err)
			}
			before := u.DeepCopy()
			r := v.Validate(context.Background(), u)
			if r.Known == tc.unknownGroup {
				t.Fatalf("known %t", r.Known)
			}
			switch got := r.Summary(); {
			case tc.errs == "" && got != "":
				t.Errorf("errors %q, want none", got)
			case tc.errs != "" && !strings.Contains(got, tc.errs):
				t.Errorf("errors %q, want %q", got, tc.errs)
			}
			if d := strings.Join(r.Dropped, ","); d != tc.dropped {
				t.Errorf("dropped %q, want %q", d, tc.dropped)
			}
			if !equalObjects(before, u) {
				t.Error("Validate changed its input")
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}
