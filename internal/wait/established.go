package wait

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// established bounds the watches open at once.
const established = 16

// Established waits until kstatus computes every CRD and Namespace among
// objs Current (a CRD Established with its names accepted, a Namespace
// Active). Other kinds are ready once they exist and are not waited for.
// Each object has its own watch, selected by name, so a cluster with
// thousands of CRDs is never listed whole.
func Established(ctx context.Context, c client.WithWatch, objs []*unstructured.Unstructured, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(established)
	for _, o := range objs {
		if !ssautils.IsCRD(o) && !ssautils.IsNamespace(o) {
			continue
		}
		gvk := o.GroupVersionKind()
		g.Go(func() error {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			var failed string
			_, err := For(gctx, c, list, o.GetNamespace(), o.GetName(), func(u *unstructured.Unstructured) (bool, string) {
				r, err := status.Compute(u)
				if err != nil {
					return false, err.Error()
				}
				if r.Status == status.FailedStatus {
					// e.g. a CRD whose names conflict: it never becomes
					// established, so waiting out the timeout buys nothing.
					failed = r.Message
					return true, ""
				}
				return r.Status == status.CurrentStatus, fmt.Sprintf("%s: %s", r.Status, r.Message)
			})
			switch {
			case err != nil:
				return fmt.Errorf("%s %w (--timeout %s)", gvk.Kind, err, timeout)
			case failed != "":
				return fmt.Errorf("%s failed: %s", objectID(gvk.Kind, o.GetNamespace(), o.GetName()), failed)
			}
			return nil
		})
	}
	return g.Wait()
}
