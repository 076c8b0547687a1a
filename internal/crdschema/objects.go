package crdschema

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromObjects is the Validator of the CustomResourceDefinitions among objs
// (a render about to be applied: the CRDs the API server will serve once
// it is), as New builds them; objects of other kinds are left out.
func FromObjects(objs []*unstructured.Unstructured, origin string) (*Validator, error) {
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != apiextensionsv1.GroupName || gvk.Kind != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
			return nil, fmt.Errorf("%s: CustomResourceDefinition %s: %w", origin, o.GetName(), err)
		}
		crds = append(crds, crd)
	}
	return New(crds, origin)
}
