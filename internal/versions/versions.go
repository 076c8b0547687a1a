// Package versions reads the pinned versions from versions.env.
package versions

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/joho/godotenv"

	bootstrap "github.com/homelab-ops/bootstrap"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// Pins are the versions this build of the tool was made with.
type Pins struct {
	// FluxVersion is the Flux release rendered by default.
	FluxVersion string
	// EmbeddedFluxVersions are the releases whose bundles are embedded.
	EmbeddedFluxVersions []string
	// BundleModule, BundleModuleVersion and BundleModuleSum pin the Go module
	// whose zip carries the release bundles.
	BundleModule        string
	BundleModuleVersion string
	BundleModuleSum     string
	// MinKubernetes maps a Flux version to the oldest Kubernetes it supports.
	MinKubernetes map[string]string
	// OperatorMaxFlux maps a Flux Operator release to the newest Flux
	// release it ships (FLUX_OPERATOR_MAX_FLUX).
	OperatorMaxFlux map[string]string
	// All is every key of versions.env.
	All map[string]string
}

// Load parses the versions.env embedded in the binary.
func Load() (Pins, error) {
	return Parse(bootstrap.VersionsEnv)
}

// Parse reads a versions.env document and checks the keys the tool needs.
func Parse(data []byte) (Pins, error) {
	env, err := godotenv.Parse(bytes.NewReader(data))
	if err != nil {
		return Pins{}, fmt.Errorf("parse versions.env: %w", err)
	}
	p := Pins{
		FluxVersion:         env["FLUX_VERSION"],
		BundleModule:        env["FLUX_BUNDLE_MODULE"],
		BundleModuleVersion: env["FLUX_BUNDLE_MODULE_VERSION"],
		BundleModuleSum:     env["FLUX_BUNDLE_MODULE_SUM"],
		All:                 env,
	}
	for _, v := range strings.Split(env["FLUX_EMBEDDED_VERSIONS"], ",") {
		if v = strings.TrimSpace(v); v != "" {
			p.EmbeddedFluxVersions = append(p.EmbeddedFluxVersions, v)
		}
	}
	p.MinKubernetes = map[string]string{}
	for _, pair := range strings.Split(env["FLUX_MIN_KUBERNETES"], ",") {
		flux, kube, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if ok {
			p.MinKubernetes[flux] = kube
		}
	}
	p.OperatorMaxFlux = map[string]string{}
	for _, pair := range strings.Split(env["FLUX_OPERATOR_MAX_FLUX"], ",") {
		op, flux, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if ok {
			p.OperatorMaxFlux[op] = flux
		}
	}
	var missing []string
	for _, k := range []string{"FLUX_VERSION", "FLUX_EMBEDDED_VERSIONS", "FLUX_BUNDLE_MODULE", "FLUX_BUNDLE_MODULE_VERSION", "FLUX_BUNDLE_MODULE_SUM"} {
		if env[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Pins{}, fmt.Errorf("versions.env: missing %s; add them as KEY=VALUE lines", strings.Join(missing, ", "))
	}
	return p, nil
}

// ReadFile reads every key of a versions.env file with the same parser as
// Parse (for tools that run from a checkout, such as the sandbox).
//
// The read is bounded and refuses anything but a regular file (a device
// such as /dev/zero would otherwise be read until memory runs out).
func ReadFile(path string) (map[string]string, error) {
	b, err := safeio.ReadFile(path, path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	env, err := godotenv.UnmarshalBytes(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return env, nil
}
