package patches

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"golang.org/x/mod/semver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
)

// FeatureGatesFlag is every Flux controller's flag setting feature gates
// (fluxcd/pkg/runtime/features FeatureGates.BindFlags).
const FeatureGatesFlag = "feature-gates"

// Flags are a container's effective command-line flags.
type Flags struct {
	// Values holds the last value of each flag other than --feature-gates;
	// a flag given without a value holds "true".
	Values map[string]string
	// FeatureGates are the gates the args set explicitly, merged the way the
	// controllers merge them: repeated flags add up, a later value wins.
	FeatureGates map[string]bool
	// GateArgs are the --feature-gates args in order, for evidence.
	GateArgs []string
}

// ParseArgs computes the effective flags of a container's args. Flux
// controllers take `--name=value`; a bare `--name` followed by a value that is
// not a flag takes that value, as pflag does for non-boolean flags.
func ParseArgs(args []string) (Flags, error) {
	f := Flags{Values: map[string]string{}, FeatureGates: map[string]bool{}}
	// The controllers bind --feature-gates to this very type.
	gates := cliflag.NewMapStringBool(&f.FeatureGates)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !hasValue {
			value = "true"
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
				i++
			}
		}
		if name == FeatureGatesFlag {
			if err := gates.Set(value); err != nil {
				return f, fmt.Errorf("arg %q: %w", a, err)
			}
			f.GateArgs = append(f.GateArgs, "--"+FeatureGatesFlag+"="+value)
			continue
		}
		f.Values[name] = value
	}
	return f, nil
}

// GateDefault is a feature gate's default in a controller from a version on.
type GateDefault struct {
	Controller string
	Gate       string
	// Since is the first controller version where the gate defaults to on;
	// "" for an opt-in gate, off by default in every version recorded.
	Since string
}

// StrictSubstitution is the gate this tool exists to enforce.
const StrictSubstitution = "StrictPostBuildSubstitutions"

// GateDefaults are the defaults of the gates the tool reads, for every
// version, including those whose complete gate table is not recorded
// (SupportedGates; TestGateTableAgrees holds the two together). Before
// Since a gate is off.
func GateDefaults() []GateDefault {
	return []GateDefault{
		{Controller: "kustomize-controller", Gate: StrictSubstitution, Since: "v1.9.0"},
		// internal/features (v1.9.5): opt-in from v1.7.
		{Controller: "kustomize-controller", Gate: ExternalArtifact},
		// internal/features (v1.6.4): opt-in from v1.4.0.
		{Controller: "helm-controller", Gate: AdditiveCELDependencyCheck},
	}
}

// AdditiveCELDependencyCheck is the feature gate (helm-controller and
// kustomize-controller, off by default) that runs the built-in readiness
// check of a dependency beside its readyExpr instead of replacing it.
const AdditiveCELDependencyCheck = "AdditiveCELDependencyCheck"

// ExternalArtifact is the gate without which kustomize-controller refuses a
// Kustomization whose source is an ExternalArtifact.
const ExternalArtifact = "ExternalArtifact"

// Gate is a feature gate's effective value and why.
type Gate struct {
	Value bool
	// Explicit is true when the args set the gate.
	Explicit bool
	// Default is the controller version's default; Known is false when the
	// version could not be read or no default is recorded.
	Default      bool
	DefaultKnown bool
	// Unsupported is true when the version's gate table is recorded and
	// lacks the gate: the controller would exit at start-up if it were set.
	Unsupported bool
}

// EffectiveGate resolves a gate from explicit args, else from the
// controller version's default.
func EffectiveGate(controller, version string, f Flags, gate string) Gate {
	g := Gate{}
	var rec *GateDefault
	for _, d := range GateDefaults() {
		if d.Controller == controller && d.Gate == gate {
			rec = &d
		}
	}
	switch t := SupportedGates(controller, version); {
	case t.Known:
		// The controller's own table. A gate it lacks at this version is
		// off when GateDefaults records it for this controller (a gate of a
		// later version); any other gate it lacks stays unknown.
		d, ok := t.Defaults[gate]
		g.DefaultKnown, g.Default, g.Unsupported = ok || rec != nil, d, !ok && !t.AnyName
	case rec != nil && semver.IsValid(version):
		g.DefaultKnown = true
		g.Default = rec.Since != "" && semver.Compare(version, rec.Since) >= 0
	}
	if v, ok := f.FeatureGates[gate]; ok {
		g.Value, g.Explicit = v, true
		return g
	}
	g.Value = g.Default
	return g
}

// ImageVersion returns the tag of an image reference, or "" for a digest-only,
// untagged or unparsable image.
func ImageVersion(image string) string {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	if t, ok := ref.(reference.Tagged); ok {
		return t.Tag()
	}
	return ""
}

// ManagerFlags are the effective flags of a Flux controller Deployment's
// manager container (the first container when none is named so).
func ManagerFlags(dep *appsv1.Deployment) (Flags, error) {
	return ParseArgs(ManagerContainer(dep.Spec.Template.Spec.Containers).Args)
}

// ManagerImage is the image of a Flux controller Deployment's manager
// container (the first container when none is named so).
func ManagerImage(dep *appsv1.Deployment) string {
	return ManagerContainer(dep.Spec.Template.Spec.Containers).Image
}

// ManagerContainer is a Flux controller's container: "manager" in every
// Flux controller Deployment, else the first (an empty one when there is
// none).
func ManagerContainer(cs []corev1.Container) corev1.Container {
	for _, c := range cs {
		if c.Name == "manager" {
			return c
		}
	}
	if len(cs) == 0 {
		return corev1.Container{}
	}
	return cs[0]
}
