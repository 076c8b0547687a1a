// Package schematest holds objects of Flux v2.9.5's kinds, each written or
// broken in one way, with what the API server says of them on create: the
// unit test of crdschema and the e2e test against the sandbox's real
// kube-apiserver read the same table.
package schematest

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// FluxVersion is the release whose CRDs the cases are written for.
const FluxVersion = "v2.9.5"

// Case is one object and the verdict.
type Case struct {
	Name string
	// Doc is the object, YAML; its namespace is flux-system.
	Doc string
	// Errs is a substring of the refusal; "" when the object is accepted.
	Errs string
	// Dropped is the field path the API server prunes ("" none).
	Dropped string
	// NotFlux: not a kind of the release (the validator does not judge it).
	NotFlux bool
}

const ks = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: schema-apps
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
  name: schema-podinfo
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: podinfo
`

// Cases are the table.
func Cases() []Case {
	return []Case{
		{Name: "Kustomization as written", Doc: ks},
		{Name: "HelmRelease as written", Doc: hr},
		{Name: "interval as a number", Doc: strings.Replace(ks, "interval: 10m", "interval: 10", 1), Errs: `spec.interval: Invalid value: "integer": spec.interval in body must be of type string`},
		{Name: "interval not a duration", Doc: strings.Replace(ks, "interval: 10m", "interval: ten minutes", 1), Errs: "spec.interval"},
		{Name: "prune as a string", Doc: strings.Replace(ks, "prune: true", `prune: "true"`, 1), Errs: "spec.prune in body must be of type boolean"},
		{Name: "no sourceRef", Doc: strings.Split(ks, "  sourceRef:")[0], Errs: "spec.sourceRef: Required value"},
		{Name: "sourceRef kind not a source", Doc: strings.Replace(ks, "kind: GitRepository", "kind: GitRepo", 1), Errs: `spec.sourceRef.kind: Unsupported value: "GitRepo"`},
		{Name: "neither chart nor chartRef (CEL rule)", Doc: strings.Split(hr, "  chartRef:")[0], Errs: "either chart or chartRef must be set"},
		{Name: "drift detection mode outside its enum", Doc: hr + "  driftDetection:\n    mode: enable\n", Errs: `spec.driftDetection.mode: Unsupported value: "enable"`},
		{Name: "an unknown field is dropped", Doc: ks + "  prun: false\n", Dropped: "spec.prun"},
		{Name: "a version no longer served", Doc: strings.Replace(ks, "kustomize.toolkit.fluxcd.io/v1", "kustomize.toolkit.fluxcd.io/v1beta1", 1), Errs: `kustomize.toolkit.fluxcd.io/v1beta1`},
		{Name: "a name the API refuses", Doc: strings.Replace(ks, "name: schema-apps", "name: Apps_1", 1), Errs: `metadata.name: Invalid value: "Apps_1"`},
		{Name: "not a Flux group", Doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: flux-system\n", NotFlux: true},
	}
}

// Object is the case's object as the API server decodes it: through JSON,
// integers int64.
func (c Case) Object() (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON([]byte(c.Doc))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(j)
}
