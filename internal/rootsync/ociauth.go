package rootsync

import (
	"bytes"
	"context"
	"fmt"

	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/config/credentials"
	clitypes "github.com/docker/cli/cli/config/types"
	"github.com/fluxcd/pkg/runtime/secrets"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ociAuth is the registry credential source-controller uses for o
// (v1.9.5 ocirepository_controller.go keychain: the image pull Secret of
// spec.secretRef, then those of spec.serviceAccountName's ServiceAccount,
// else anonymous), for repo's registry. The Secrets are read as
// go-containerregistry's k8schain reads image pull Secrets: a
// kubernetes.io/dockerconfigjson's .dockerconfigjson, the registry's entry
// found by docker's own file store (credentials.NewFileStore: the key as
// written, or any key whose hostname is the registry's); never a
// credential helper. The first Secret with an entry wins.
//
// With no pull Secret and a cloud provider, the controller authenticates
// with that provider's workload identity: not read here (errOCIUnread).
func ociAuth(ctx context.Context, c client.Client, o *sourcev1.OCIRepository, repo name.Repository) (authn.Authenticator, error) {
	var pull []corev1.Secret
	if o.Spec.SecretRef != nil && o.Spec.SecretRef.Name != "" {
		var s corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Spec.SecretRef.Name}, &s); err != nil {
			return nil, fmt.Errorf("failed to get secret '%s/%s': %w", o.Namespace, o.Spec.SecretRef.Name, err)
		}
		pull = append(pull, s)
	}
	if o.Spec.ServiceAccountName != "" {
		sa, err := secrets.PullSecretsFromServiceAccountRef(ctx, c, types.NamespacedName{Namespace: o.Namespace, Name: o.Spec.ServiceAccountName})
		if err != nil {
			return nil, err
		}
		pull = append(pull, sa...)
	}
	for _, s := range pull {
		data, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, fmt.Errorf("%w: Secret %s/%s has no %s key (only a %s Secret is read here)", errOCIUnread, s.Namespace, s.Name, corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson)
		}
		cf := configfile.New("")
		if err := cf.LoadFromReader(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %s: %w", s.Namespace, s.Name, corev1.DockerConfigJsonKey, err)
		}
		ac, err := credentials.NewFileStore(cf).Get(repo.RegistryStr())
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		if ac == (clitypes.AuthConfig{}) {
			continue
		}
		return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}), nil
	}
	if len(pull) == 0 && o.Spec.Provider != "" && o.Spec.Provider != sourcev1.GenericOCIProvider {
		return nil, fmt.Errorf("%w: it authenticates with the %s provider's workload identity", errOCIUnread, o.Spec.Provider)
	}
	return authn.Anonymous, nil
}
