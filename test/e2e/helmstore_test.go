//go:build e2e

package e2e

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deployedRelease reads the deployed release of a HelmRelease from Helm's
// own storage (the Secrets helm-controller writes), with Helm's storage
// library: what the cluster really runs, not what the HelmRelease asks for.
func deployedRelease(ctx context.Context, c client.Client, cs kubernetes.Interface, namespace, name string) (*rspb.Release, error) {
	var hr helmv2.HelmRelease
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &hr); err != nil {
		return nil, err
	}
	st := storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(hr.GetStorageNamespace())))
	rel, err := st.Deployed(hr.GetReleaseName())
	if err != nil {
		return nil, fmt.Errorf("helm release %s of HelmRelease %s/%s: %w", hr.GetReleaseName(), namespace, name, err)
	}
	r, ok := rel.(*rspb.Release)
	if !ok {
		return nil, fmt.Errorf("helm release %s: unexpected type %T", hr.GetReleaseName(), rel)
	}
	return r, nil
}
