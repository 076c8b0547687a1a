package fluxrepo

import (
	"fmt"
	"strings"
)

// BuildReason says why a Kustomization's path does not build.
type BuildReason int

const (
	// BuildFailed: kustomize build of the path failed (kustomize-controller
	// v1.x: BuildFailed).
	BuildFailed BuildReason = iota
	// ComponentUnderResources: kustomize refused a kind: Component
	// directory listed under resources: (kustomize api v0.21.2,
	// internal/target/kusttarget.go accumulateDirectory). A BuildFailed too.
	ComponentUnderResources
	// PathNotFound: spec.path is not a directory of the source
	// (kustomize-controller: "kustomization path not found").
	PathNotFound
	// GeneratorRefused: the ExternalArtifact the Kustomization reads is
	// made by an ArtifactGenerator whose spec source-watcher refuses.
	GeneratorRefused
	// GeneratorFailed: source-watcher fails the build of the
	// ExternalArtifact the Kustomization reads.
	GeneratorFailed
)

// BuildError is why Kustomization's path does not build: the loader's
// failure, typed, as Kustomization.Err holds it with Options.KeepGoing
// (and as Load returns it without).
type BuildError struct {
	// Kustomization is the failing Kustomization (namespace/name) and
	// Location where it is declared.
	Kustomization string
	Location      Location
	// Path is its spec.path as written.
	Path   string
	Reason BuildReason
	// Cause is the failure, worded without the Kustomization (an
	// InputError: the repository's defect).
	Cause error
}

func (e *BuildError) Error() string {
	sep := ": "
	if e.Reason == GeneratorRefused || e.Reason == GeneratorFailed {
		sep = " " // the cause reads on: "reads <artifact>, which …"
	}
	return fmt.Sprintf("Kustomization %s (%s)%s%v", e.Kustomization, e.Location, sep, e.Cause)
}

func (e *BuildError) Unwrap() error { return e.Cause }

// buildError is the BuildError of k.
func buildError(k *Kustomization, r BuildReason, cause error) *BuildError {
	return &BuildError{Kustomization: k.Ref(), Location: k.Location, Path: k.Spec.Path, Reason: r, Cause: cause}
}

// kustomizeReason classifies a failed kustomize build. kustomize returns
// plain errors, so its own words are read here, once, where its error is
// met: accumulateDirectory (kustomize api v0.21.2,
// internal/target/kusttarget.go) refuses a Component under resources:
// with "expected kind != 'Component' for path …".
func kustomizeReason(err error) BuildReason {
	if strings.Contains(err.Error(), "expected kind != 'Component'") {
		return ComponentUnderResources
	}
	return BuildFailed
}

// generatorReason is the reason of a Kustomization whose artifact nm says
// source-watcher would not make: its generator's spec refused (the
// generator's Err), or the artifact's build failed.
func generatorReason(nm *notMade) BuildReason {
	if nm.gen.Err != nil {
		return GeneratorRefused
	}
	return GeneratorFailed
}
