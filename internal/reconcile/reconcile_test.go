package reconcile

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestRequest: the annotation is set; a refused connection is retried
// until the API server takes it; a refusal by the API (403) is not retried.
func TestRequest(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kustomizev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	refused := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "kustomizations"}, "a", errors.New("no"))
	quick := utilwait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 5}
	for _, c := range []struct {
		name     string
		fail     error
		failures int
		wantErr  bool
		patches  int
	}{
		{"taken", nil, 0, false, 1},
		{"refused twice, then taken", refused, 2, false, 3},
		{"refused for good", refused, 99, true, 5},
		{"forbidden: not retried", forbidden, 99, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "a"}}
			patches := 0
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(k.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					patches++
					if patches <= c.failures {
						return c.fail
					}
					return cl.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			err := Request(context.Background(), cl, k.DeepCopy(), "t1", quick)
			if (err != nil) != c.wantErr || patches != c.patches {
				t.Fatalf("err %v (want error %t), %d patch requests (want %d)", err, c.wantErr, patches, c.patches)
			}
			var got kustomizev1.Kustomization
			_ = cl.Get(context.Background(), client.ObjectKeyFromObject(k), &got)
			if set := got.Annotations[meta.ReconcileRequestAnnotation] == "t1"; set == c.wantErr {
				t.Fatalf("annotation %q after err %v", got.Annotations[meta.ReconcileRequestAnnotation], err)
			}
		})
	}
}
