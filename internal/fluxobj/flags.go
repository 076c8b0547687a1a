package fluxobj

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/homelab-ops/bootstrap/pkg/patches"
)

// SOPSAgeFlag is kustomize-controller's flag naming the fallback age key.
const SOPSAgeFlag = "sops-age-secret"

// SOPSAgeSecret is the Secret kustomize-controller's --sops-age-secret names
// in dep (its own namespace), "" when the flag is unset. kustomize-controller
// v1.9.5 (main.go; internal/decryptor ImportKeys) imports it for a
// Kustomization with spec.decryption provider sops and no secretRef; one
// without a decryption stanza is not decrypted at all, flag or not.
func SOPSAgeSecret(dep *appsv1.Deployment) (string, error) {
	f, err := patches.ManagerFlags(dep)
	if err != nil {
		return "", fmt.Errorf("Deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	return f.Values[SOPSAgeFlag], nil
}

// RequeueDependencyFlag is kustomize- and helm-controller's flag for how
// long a Kustomization or HelmRelease blocked on a dependency waits before
// the controller checks its dependencies again (no watch wakes it sooner).
const RequeueDependencyFlag = "requeue-dependency"

// DefaultRequeueDependency is that flag's default in both controllers
// (main.go, kustomize-controller v1.9.5 and helm-controller v1.6.4:
// flag.DurationVar(&requeueDependency, "requeue-dependency", 30*time.Second, …)).
const DefaultRequeueDependency = 30 * time.Second

// RequeueDependency is the controller's effective --requeue-dependency in
// f: the flag's value, parsed as the controller's flag package parses a
// duration, else the default (explicit false).
func RequeueDependency(f patches.Flags) (d time.Duration, explicit bool, err error) {
	v, ok := f.Values[RequeueDependencyFlag]
	if !ok {
		return DefaultRequeueDependency, false, nil
	}
	d, err = time.ParseDuration(v)
	if err != nil {
		return 0, true, fmt.Errorf("--%s=%s: %w", RequeueDependencyFlag, v, err)
	}
	return d, true, nil
}
