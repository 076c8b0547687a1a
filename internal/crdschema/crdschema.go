// Package crdschema validates objects of a Flux release's kinds as the API
// server does on create, from the CustomResourceDefinitions of that
// release's bundle: apiextensions-apiserver's own calls, in its order
// (v0.36 pkg/apiserver customresource_handler.go builds the schemas;
// pkg/registry/customresource strategy.go and validator.go validate).
package crdschema

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/homelab-ops/bootstrap/pkg/components"
)

// Validator validates the kinds of one set of CRDs.
type Validator struct {
	// Origin names the CRDs, for messages (e.g. "Flux v2.9.5's CRDs").
	Origin string
	groups map[string]*group
}

type group struct {
	// kinds by kind, then version; a version not served is absent.
	kinds map[string]map[string]*version
	// served lists each kind's served versions, for messages.
	served map[string][]string
}

type version struct {
	namespaced bool
	validator  apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

// Result is what the API server would say of one object.
type Result struct {
	// Known is false when no CRD of the set defines the object's group: the
	// Validator does not judge it.
	Known bool
	// Errors refuse the object (the create fails).
	Errors field.ErrorList
	// Dropped are the fields the API server prunes (unknown to the
	// schema): the object is accepted without them.
	Dropped []string
}

// New builds the validators of crds, as the API server builds them when a
// CRD becomes established.
func New(crds []apiextensionsv1.CustomResourceDefinition, origin string) (*Validator, error) {
	v := &Validator{Origin: origin, groups: map[string]*group{}}
	for i := range crds {
		crd := &crds[i]
		g := v.groups[crd.Spec.Group]
		if g == nil {
			g = &group{kinds: map[string]map[string]*version{}, served: map[string][]string{}}
			v.groups[crd.Spec.Group] = g
		}
		kind := crd.Spec.Names.Kind
		g.kinds[kind] = map[string]*version{}
		for _, ver := range crd.Spec.Versions {
			if !ver.Served {
				continue
			}
			val, err := apihelpers.GetSchemaForVersion(crd, ver.Name)
			if err != nil || val == nil {
				return nil, fmt.Errorf("%s: CRD %s version %s: no schema (%v)", origin, crd.Name, ver.Name, err)
			}
			internal := &apiextensions.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
				return nil, fmt.Errorf("%s: CRD %s version %s: %w", origin, crd.Name, ver.Name, err)
			}
			s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: CRD %s version %s: not a structural schema: %w", origin, crd.Name, ver.Name, err)
			}
			s = s.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("%s: CRD %s version %s: %w", origin, crd.Name, ver.Name, err)
			}
			sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: CRD %s version %s: %w", origin, crd.Name, ver.Name, err)
			}
			g.kinds[kind][ver.Name] = &version{
				namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
				validator:  sv, structural: s,
				cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
			}
			g.served[kind] = append(g.served[kind], ver.Name)
		}
	}
	return v, nil
}

// releases: Flux version → *release.
var releases sync.Map

type release struct {
	once sync.Once
	v    *Validator
	err  error
}

// ForFlux is the Validator of an embedded Flux release's CRDs, built once
// per process.
func ForFlux(fluxVersion string) (*Validator, error) {
	return forRelease(fluxVersion, fluxVersion, func(crds []apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
		return New(crds, "Flux "+fluxVersion+"'s CRDs")
	})
}

// ForFluxOperator is the Validator of an embedded Flux release's CRDs as the
// Flux Operator installs them (OperatorCRDs), built once per process.
func ForFluxOperator(fluxVersion string) (*Validator, error) {
	return forRelease("operator/"+fluxVersion, fluxVersion, func(crds []apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
		return New(OperatorCRDs(crds), "Flux "+fluxVersion+"'s CRDs as the Flux Operator installs them")
	})
}

// forRelease builds, once per key, the Validator of an embedded release's
// CRDs with build.
func forRelease(key, fluxVersion string, build func([]apiextensionsv1.CustomResourceDefinition) (*Validator, error)) (*Validator, error) {
	r, _ := releases.LoadOrStore(key, &release{})
	rel := r.(*release)
	rel.once.Do(func() {
		b, err := components.EmbeddedBundle(fluxVersion)
		if err != nil {
			rel.err = err
			return
		}
		crds, err := b.CRDs()
		if err != nil {
			rel.err = err
			return
		}
		rel.v, rel.err = build(crds)
	})
	return rel.v, rel.err
}

// OperatorKinds are the Flux Operator's kinds it lets notification-controller
// send events of and receive webhooks for.
var OperatorKinds = []string{"FluxInstance", "ResourceSet", "ResourceSetInputProvider"}

// operatorEnums are the enums the Flux Operator extends: the CRD, and the
// path of the kind enum under spec.
var operatorEnums = map[string][]string{
	"alerts.notification.toolkit.fluxcd.io":    {"eventSources", "kind"},
	"receivers.notification.toolkit.fluxcd.io": {"resources", "kind"},
}

// OperatorCRDs are crds as the Flux Operator installs them: OperatorKinds
// appended to the enum of Alert spec.eventSources[].kind and of Receiver
// spec.resources[].kind, in every version the CRD carries (the operator's
// builder patches each version the release's CRD has). crds is not changed.
func OperatorCRDs(crds []apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinition {
	out := make([]apiextensionsv1.CustomResourceDefinition, len(crds))
	for i := range crds {
		out[i] = *crds[i].DeepCopy()
		p, ok := operatorEnums[out[i].Name]
		if !ok {
			continue
		}
		for _, ver := range out[i].Spec.Versions {
			if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			spec, ok := ver.Schema.OpenAPIV3Schema.Properties["spec"]
			if !ok {
				continue
			}
			list, ok := spec.Properties[p[0]]
			if !ok || list.Items == nil || list.Items.Schema == nil {
				continue
			}
			kind, ok := list.Items.Schema.Properties[p[1]]
			if !ok || len(kind.Enum) == 0 {
				continue
			}
			for _, k := range OperatorKinds {
				kind.Enum = append(kind.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + k + `"`)})
			}
			// The schema's maps hold values: write each level back.
			list.Items.Schema.Properties[p[1]] = kind
			spec.Properties[p[0]] = list
			ver.Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}
	}
	return out
}

// Validate is the API server's create of u: the unknown fields pruned (and
// reported), the schema defaults applied, then the object metadata, the
// OpenAPI schema, embedded objects, list types and the x-kubernetes-
// validations rules checked. u is not changed.
func (v *Validator) Validate(ctx context.Context, u *unstructured.Unstructured) Result {
	gvk := u.GroupVersionKind()
	g := v.groups[gvk.Group]
	if g == nil {
		return Result{}
	}
	res := Result{Known: true}
	versions, ok := g.kinds[gvk.Kind]
	if !ok {
		res.Errors = field.ErrorList{field.NotSupported(field.NewPath("kind"), gvk.Kind, sortedKeys(g.kinds))}
		return res
	}
	ver := versions[gvk.Version]
	if ver == nil {
		res.Errors = field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), u.GetAPIVersion(), apiVersions(gvk.GroupKind(), g.served[gvk.Kind]))}
		return res
	}
	obj := runtime.DeepCopyJSON(u.Object)
	res.Dropped = structuralpruning.PruneWithOptions(obj, ver.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	structuraldefaulting.Default(obj, ver.structural)
	cu := &unstructured.Unstructured{Object: obj}
	if ver.namespaced && cu.GetNamespace() == "" {
		// kustomize-controller applies it in a namespace (the
		// Kustomization's targetNamespace, or the object's own); the
		// check does not judge the one the build leaves empty.
		cu.SetNamespace("default")
	}
	var errs field.ErrorList
	errs = append(errs, validation.ValidateObjectMetaAccessor(cu, ver.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, cu.UnstructuredContent(), ver.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, cu.Object, ver.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, cu.Object)...)
	if !blocking(errs) {
		celErrs, _ := ver.cel.Validate(ctx, nil, ver.structural, cu.Object, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	res.Errors = errs
	return res
}

// blocking is the strategy's hasBlockingErr: with these the CEL rules are
// not evaluated.
func blocking(errs field.ErrorList) bool {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

func apiVersions(gk schema.GroupKind, versions []string) []string {
	out := make([]string, 0, len(versions))
	for _, v := range versions {
		out = append(out, gk.Group+"/"+v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Summary is the result's errors as one line, for a finding.
func (r Result) Summary() string {
	parts := make([]string, 0, len(r.Errors))
	for _, e := range r.Errors {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}
