package wait

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Established waits until kstatus computes every CRD and Namespace among
// objs Current (a CRD Established with its names accepted, a Namespace
// Active). Other kinds are ready once they exist and are not waited for.
// Each object has its own watch, selected by name, so a cluster with
// thousands of CRDs is never listed whole.
func Established(ctx context.Context, c client.WithWatch, objs []*unstructured.Unstructured, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if !(gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition") && !(gvk.Group == "" && gvk.Kind == "Namespace") {
			continue
		}
		g.Go(func() error {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			_, err := For(gctx, c, list, o.GetNamespace(), o.GetName(), func(u *unstructured.Unstructured) (bool, string) {
				r, err := status.Compute(u)
				if err != nil {
					return false, err.Error()
				}
				return r.Status == status.CurrentStatus, fmt.Sprintf("%s: %s", r.Status, r.Message)
			})
			if err != nil {
				return fmt.Errorf("%s %w (--timeout %s)", gvk.Kind, err, timeout)
			}
			return nil
		})
	}
	return g.Wait()
}
