package fluxobj

// RevisionGated is kustomize-controller's revision gate on a dependsOn
// edge: a Kustomization reading dependentSource waits for a dependency
// reading dependencySource to have applied the revision of its own
// source's current artifact only when both read the same source (kind,
// namespace and name, namespaces defaulted to each Kustomization's own as
// KustomizationSource defaults them); across sources dependsOn orders by
// readiness alone, so a dependent may apply a commit its dependency has not.
// kustomize-controller v1.9.4 internal/controller/kustomization_controller.go
// checkDependencies ("dependency '%s' revision is not up to date").
// helm-controller gates no revision (HelmReleaseDependencyReady).
func RevisionGated(dependentSource, dependencySource Ref) bool {
	return dependentSource == dependencySource
}
