package check

// detHelmDependsOn is the [helm-depends-on] row of the table of detectors.
var detHelmDependsOn = detector{ID: HelmDependsOn, Gate: Graph, Advisory: false,
	Short: "HelmRelease dependsOn naming a Kustomization: helm-controller waits for HelmReleases only",
	Rule:  "helm-controller v1.6.4 checkDependencies reads dependsOn entries as HelmReleases",
}
