package cutover

import (
	"context"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestCutoverRetriesTheHandOver: a GitRepository back on git's URL whose
// fields this tool still owns (a cutover whose hand-over failed, or one
// from before it made any) is handed to kustomize-controller's field
// manager by the next cutover, which otherwise has nothing to do; a dry
// run changes nothing.
func TestCutoverRetriesTheHandOver(t *testing.T) {
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://git.lan/gitops.git"
	for _, dry := range []bool{false, true} {
		live := &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: kube.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: sourcev1.GroupVersion.String(), FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:url":{}}}`)}},
			}},
			Spec: sourcev1.GitRepositorySpec{URL: url},
		}
		c := fake.NewClientBuilder().WithScheme(scheme).WithReturnManagedFields().WithObjects(live).Build()
		r := verify.NewReport("cutover")
		o := Options{Namespace: "flux-system", Name: "flux-system", Timeout: time.Minute, DryRun: dry}
		if err := Run(context.Background(), &apply.Cluster{Client: c}, o, r); err != nil {
			t.Fatal(err)
		}
		var got sourcev1.GitRepository
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), &got); err != nil {
			t.Fatal(err)
		}
		owned := apply.OwnedBy(&got, kube.FieldManager)
		var hb *verify.Check
		for i := range r.Checks {
			if r.Checks[i].ID == GateHandedBack.ID {
				hb = &r.Checks[i]
			}
		}
		switch {
		case dry && (hb != nil || len(owned) == 0 || r.Changed):
			t.Errorf("dry run: handed-back %v, still owned %v, changed %t; want nothing done", hb, owned, r.Changed)
		case !dry && (hb == nil || hb.Verdict != verify.Pass || len(owned) > 0 || !r.Changed):
			t.Errorf("handed-back %v, still owned %v, changed %t; want a pass and kustomize-controller the only owner", hb, owned, r.Changed)
		}
	}
}
