package patches

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

// gateTable is every feature gate, with its default, of each Flux
// controller version the embedded release bundles deploy, read from the
// controllers' own internal/features at the version's git tag or Go module
// (hack/gengates). A version neither could be read for is recorded
// "unavailable".
//
//go:embed gatedefaults.txt
var gateTable string

// ControllerGates are the feature gates a controller version supports.
type ControllerGates struct {
	// Known is false when the version's gates could not be read (neither
	// its tag nor its module could be, or the version is not one the
	// bundles deploy).
	Known bool
	// AnyName is true for a version that parses --feature-gates but never
	// declares its supported features (fluxcd/pkg/runtime/features
	// SupportedFeatures is never called, source-watcher v2.0.x): it
	// neither refuses nor reads any name, and Defaults is empty.
	AnyName bool
	// Defaults maps each supported gate to its default.
	Defaults map[string]bool
}

var parsedGates = sync.OnceValue(func() map[string]ControllerGates {
	out := map[string]ControllerGates{}
	for _, line := range strings.Split(gateTable, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			panic(fmt.Sprintf("gatedefaults.txt: malformed line %q", line))
		}
		key := f[0] + "@" + f[1]
		switch f[2] {
		case "unavailable":
			out[key] = ControllerGates{}
			continue
		case "none":
			out[key] = ControllerGates{Known: true, Defaults: map[string]bool{}}
			continue
		case "unchecked":
			out[key] = ControllerGates{Known: true, AnyName: true, Defaults: map[string]bool{}}
			continue
		}
		g := ControllerGates{Known: true, Defaults: map[string]bool{}}
		for _, kv := range strings.Split(f[2], ",") {
			name, v, _ := strings.Cut(kv, "=")
			g.Defaults[name] = v == "true"
		}
		out[key] = g
	}
	return out
})

// SupportedGates are the feature gates of controller at version (Known false when
// not recorded).
func SupportedGates(controller, version string) ControllerGates {
	return parsedGates()[controller+"@"+version]
}
