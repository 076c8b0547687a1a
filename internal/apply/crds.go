package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/wait"
)

// Dropped is a CRD whose live status.storedVersions holds versions the new
// CRD no longer serves: objects stored in them would become unreadable.
type Dropped struct {
	CRD *unstructured.Unstructured
	// Versions are the stored versions the new CRD drops.
	Versions []string
	// Storage is the new CRD's storage version.
	Storage string
	live    *apiextensionsv1.CustomResourceDefinition
}

// StoredVersions finds every CRD of the render whose stored versions the
// new definition drops.
func StoredVersions(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured) ([]Dropped, error) {
	var out []Dropped
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	lv := ReadLive(ctx, cl.Client, crds, nil)
	for _, o := range crds {
		u, err := lv.Get(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("read CustomResourceDefinition %s: %w", o.GetName(), err)
		}
		if u == nil {
			continue
		}
		var live apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &live); err != nil {
			return nil, fmt.Errorf("decode CustomResourceDefinition %s: %w", o.GetName(), err)
		}
		var want apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &want); err != nil {
			return nil, fmt.Errorf("decode rendered CustomResourceDefinition %s: %w", o.GetName(), err)
		}
		d := Dropped{CRD: o, live: &live}
		for _, v := range want.Spec.Versions {
			if v.Storage {
				d.Storage = v.Name
			}
		}
		for _, sv := range live.Status.StoredVersions {
			if !slices.ContainsFunc(want.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == sv }) {
				d.Versions = append(d.Versions, sv)
			}
		}
		if len(d.Versions) > 0 {
			out = append(out, d)
		}
	}
	return out, nil
}

// Migrate moves each dropped CRD to its new storage version, the way
// `flux migrate` does: serve the old and new versions together, rewrite
// every object so it is stored in the new version, then record that in
// status.storedVersions. The apply that follows can then drop the old ones.
func Migrate(ctx context.Context, cl *Cluster, dropped []Dropped, timeout time.Duration, progress Progress) error {
	for _, d := range dropped {
		name := d.CRD.GetName()
		transitional := d.CRD.DeepCopy()
		versions, _, _ := unstructured.NestedSlice(transitional.Object, "spec", "versions")
		for _, lv := range d.live.Spec.Versions {
			if !slices.Contains(d.Versions, lv.Name) {
				continue
			}
			lv.Storage = false
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&lv)
			if err != nil {
				return err
			}
			versions = append(versions, m)
		}
		if err := unstructured.SetNestedSlice(transitional.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		if _, err := cl.Manager.Apply(ctx, transitional, applyOptions()); err != nil {
			return fmt.Errorf("migrate %s: serve %s beside %s: %w", name, strings.Join(d.Versions, ","), d.Storage, err)
		}
		if err := wait.Rollouts(ctx, cl.Clients(), []*unstructured.Unstructured{transitional}, timeout, progress); err != nil {
			return fmt.Errorf("migrate %s: wait for the definition: %w", name, err)
		}
		group, _, _ := unstructured.NestedString(transitional.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(transitional.Object, "spec", "names", "plural")
		gvr := schema.GroupVersionResource{Group: group, Version: d.Storage, Resource: plural}
		list, err := cl.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("migrate %s: list %s: %w", name, gvr, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			// An unchanged update makes the API server store the object in
			// the current storage version.
			if _, err := cl.Dynamic.Resource(gvr).Namespace(item.GetNamespace()).Update(ctx, item, metav1.UpdateOptions{FieldManager: "bootstrap-migrate"}); err != nil {
				return fmt.Errorf("migrate %s: rewrite %s/%s: %w", name, item.GetNamespace(), item.GetName(), err)
			}
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			return err
		}
		crd.Status.StoredVersions = []string{d.Storage}
		if err := cl.Client.Status().Update(ctx, &crd); err != nil {
			return fmt.Errorf("migrate %s: set status.storedVersions to [%s]: %w", name, d.Storage, err)
		}
		progress(fmt.Sprintf("migrated    CustomResourceDefinition/%s: %d object(s) rewritten in %s; stored versions %s dropped",
			name, len(list.Items), d.Storage, strings.Join(d.Versions, ",")))
	}
	return nil
}
