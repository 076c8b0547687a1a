package agekey

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// Fallback is kustomize-controller's --sops-age-secret as the cluster runs
// it (or will, once the render is applied): the Secret in the controller's
// namespace that a Kustomization with spec.decryption provider sops and no
// secretRef decrypts with.
type Fallback struct {
	// Name is the Secret the flag names, "" when the controller runs
	// without it.
	Name string
	// Namespace is the controller's, where the controller reads the Secret.
	Namespace string
	// From says where the flag was read, for evidence.
	From string
}

// FallbackSource reads the Fallback when the scope needs it (some
// Kustomization decrypts with provider sops and no secretRef). ErrReadLive
// asks for the live Deployment's flag instead.
type FallbackSource func(ctx context.Context) (*Fallback, error)

// ErrReadLive from a FallbackSource: read the flag from the live Deployment.
var ErrReadLive = errors.New("read the live kustomize-controller")

// FallbackOf reads the flag from a kustomize-controller Deployment.
func FallbackOf(dep *appsv1.Deployment, from string) (*Fallback, error) {
	name, err := fluxobj.SOPSAgeSecret(dep)
	if err != nil {
		return nil, err
	}
	return &Fallback{Name: name, Namespace: dep.Namespace, From: from}, nil
}

// RenderedFallback reads the flag from the render about to be applied.
func RenderedFallback(deps []appsv1.Deployment, from string) (*Fallback, error) {
	for i := range deps {
		if deps[i].Name == kustomizeController {
			return FallbackOf(&deps[i], from)
		}
	}
	return nil, fmt.Errorf("the render (%s) holds no %s Deployment", from, kustomizeController)
}

const kustomizeController = "kustomize-controller"

// liveFallback reads the flag from the live Deployment in namespace.
func liveFallback(ctx context.Context, c client.Client, namespace string) (*Fallback, error) {
	var dep appsv1.Deployment
	key := client.ObjectKey{Namespace: namespace, Name: kustomizeController}
	if err := c.Get(ctx, key, &dep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("Deployment %s not found: install the controllers first (bootstrap controllers), or decrypt with spec.decryption.secretRef", key)
		}
		return nil, fmt.Errorf("read Deployment %s: %w", key, err)
	}
	return FallbackOf(&dep, "the live Deployment "+key.String())
}

// needsFallback says whether some Kustomization of e decrypts with the
// controller's --sops-age-secret.
func needsFallback(e *fluxrepo.Env) bool {
	for _, k := range e.Kustomizations {
		if d := k.Spec.Decryption; d != nil && d.Provider == "sops" && d.SecretRef == nil {
			return true
		}
	}
	return false
}

// is says whether the fallback is the Secret namespace/name.
func (f *Fallback) is(namespace, name string) bool {
	return f != nil && f.Name != "" && f.Name == name && f.Namespace == namespace
}
