package cutover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestCutoverFluxNotInstalled: a cluster that does not serve
// source.toolkit.fluxcd.io/v1 gets a message naming the fix, not the raw
// discovery error.
func TestCutoverFluxNotInstalled(t *testing.T) {
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	// What controller-runtime's RESTMapper returns when the API server
	// answers 404 for source.toolkit.fluxcd.io/v1.
	discovery := &apiutil.ErrResourceDiscoveryFailed{sourcev1.GroupVersion: apierrors.NewNotFound(schema.GroupResource{Group: sourcev1.GroupVersion.Group}, "")}
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return fmt.Errorf("failed to get restmapping: %w", discovery)
		},
	}).Build()
	r := verify.NewReport("cutover")
	err = Run(context.Background(), &apply.Cluster{Client: c}, Options{Namespace: "flux-system", Name: "flux-system", Timeout: time.Minute}, r)
	if !errors.Is(err, rootsync.ErrFluxNotInstalled) || verify.IsInput(err) || !strings.Contains(err.Error(), "Flux is not installed in this cluster: run `bootstrap controllers`") {
		t.Fatalf("err = %v, want rootsync.ErrFluxNotInstalled (exit 1)", err)
	}
}

// TestCutoverRedactsClusterURLs: credentials someone put into the live
// GitRepository's spec.url and the temporary-source annotations appear in
// no report channel once the report is redacted (as every command does
// before writing it).
func TestCutoverRedactsClusterURLs(t *testing.T) {
	const pw = "cluster-pw-s3cr3t"
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	tmpURL := "https://mirror:" + pw + "@mirror.lan/gitops.git"
	declURL := "https://bot:" + pw + "@git.lan/gitops.git"
	live := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", Annotations: map[string]string{
			rootsync.AnnSource: rootsync.SourceTemporary, rootsync.AnnTemporaryURL: tmpURL, rootsync.AnnDeclaredURL: declURL,
			rootsync.AnnTemporarySince: time.Now().UTC().Format(time.RFC3339), rootsync.ReconcileAnnotation: rootsync.ReconcileDisabled,
		}},
		Spec: sourcev1.GitRepositorySpec{URL: tmpURL},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).Build()
	r := verify.NewReport("cutover")
	r.DryRun = true
	o := Options{Namespace: "flux-system", Name: "flux-system", Timeout: time.Minute, DryRun: true,
		To: "https://git.lan/other.git"}
	if err := Run(context.Background(), &apply.Cluster{Client: c}, o, r); err != nil {
		t.Fatal(err)
	}
	var before strings.Builder
	_ = verify.WriteJSON(&before, r)
	if !strings.Contains(before.String(), pw) {
		t.Fatalf("the test does not exercise redaction: no credential in the raw report\n%s", before.String())
	}
	input.RedactReport(r)
	var b strings.Builder
	_ = verify.WriteJSON(&b, r)
	_ = verify.WriteJUnit(&b, r)
	_ = verify.WriteText(&b, r)
	if strings.Contains(b.String(), pw) {
		t.Errorf("a cluster-read credential survived redaction:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "https://redacted@mirror.lan/gitops.git") {
		t.Errorf("the redacted URL is not shown:\n%s", b.String())
	}
}
