package patches

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/semver"

	"github.com/homelab-ops/bootstrap/internal/versions"
)

// TestGateDefaultsMatchTheController: every default GateDefaults records is
// the one the controller's own code sets at the pinned version — the
// features map of kustomize- and helm-controller's
// internal/features/features.go, read from the Go module (the sandbox
// builds the controllers from it) — and the generated table
// (hack/gengates) holds, for each pinned controller, exactly the gates of
// that map with their defaults, plus what its init adds through
// fluxcd/pkg/auth SetFeatureGates (ObjectLevelWorkloadIdentity, off).
func TestGateDefaultsMatchTheController(t *testing.T) {
	t.Parallel()
	pins, err := versions.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ controller, pin string }{
		{"kustomize-controller", "KUSTOMIZE_CONTROLLER_VERSION"},
		{"helm-controller", "HELM_CONTROLLER_VERSION"},
		{"source-controller", "SOURCE_CONTROLLER_VERSION"},
	} {
		t.Run(c.controller, func(t *testing.T) {
			t.Parallel()
			version := pins.All[c.pin]
			if version == "" {
				t.Fatalf("versions.env has no %s", c.pin)
			}
			src := moduleFile(t, "github.com/fluxcd/"+c.controller, version, "internal/features/features.go")
			defaults := featureDefaults(t, src)
			want := maps.Clone(defaults)
			if strings.Contains(src, "auth.SetFeatureGates(features)") {
				want["ObjectLevelWorkloadIdentity"] = false
			}
			if table := SupportedGates(c.controller, version); !maps.Equal(table.Defaults, want) {
				t.Errorf("gatedefaults.txt %s %s (known %t):\n%v\nits features.go:\n%v; run go run ./hack/gengates", c.controller, version, table.Known, table.Defaults, want)
			}
			n := 0
			for _, d := range GateDefaults() {
				if d.Controller != c.controller {
					continue
				}
				n++
				want, ok := defaults[d.Gate]
				if !ok {
					t.Errorf("%s %s has no feature gate %s", c.controller, version, d.Gate)
					continue
				}
				if got := d.Since != "" && semver.Compare(version, d.Since) >= 0; got != want {
					t.Errorf("GateDefaults: %s defaults to %t at %s %s; its features.go says %t", d.Gate, got, c.controller, version, want)
				}
			}
			if n == 0 && c.controller != "source-controller" {
				t.Errorf("GateDefaults records no gate of %s", c.controller)
			}
		})
	}
}

// moduleFile is a file of module@version from the module cache, downloaded
// through the module proxy when absent; the test skips when it cannot be.
func moduleFile(t *testing.T, module, version, rel string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		t.Skipf("cannot download %s@%s from the module proxy (%v): the controller's gate defaults are not compared", module, version, err)
	}
	const key = `"Dir": "`
	i := strings.Index(string(out), key)
	if i < 0 {
		t.Skipf("go mod download %s@%s printed no Dir", module, version)
	}
	dir, _, _ := strings.Cut(string(out)[i+len(key):], `"`)
	dir, err = strconv.Unquote(`"` + dir + `"`)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// featureDefaults reads `var features = map[string]bool{…}`: keys are
// constants of the file, or fluxcd/pkg/runtime/controller's FeatureGateX
// (whose value is X).
func featureDefaults(t *testing.T, src string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "features.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i >= len(vs.Values) {
				continue
			}
			switch v := vs.Values[i].(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(v.Value); err == nil {
					consts[name.Name] = s
				}
			case *ast.CompositeLit:
				if name.Name != "features" {
					continue
				}
				for _, e := range v.Elts {
					kv := e.(*ast.KeyValueExpr)
					var key string
					switch k := kv.Key.(type) {
					case *ast.Ident:
						key = consts[k.Name]
					case *ast.SelectorExpr:
						key = strings.TrimPrefix(k.Sel.Name, "FeatureGate")
					}
					out[key] = kv.Value.(*ast.Ident).Name == "true"
				}
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("features.go: no features map")
	}
	return out
}

// TestGateTableAgrees: where the table records a version, GateDefaults'
// Since rule gives the same default for every gate it names.
func TestGateTableAgrees(t *testing.T) {
	t.Parallel()
	n := 0
	for key, g := range parsedGates() {
		controller, version, _ := strings.Cut(key, "@")
		for _, d := range GateDefaults() {
			if d.Controller != controller || !g.Known {
				continue
			}
			n++
			since := d.Since != "" && semver.Compare(version, d.Since) >= 0
			if g.Defaults[d.Gate] != since {
				t.Errorf("%s %s: the table defaults %s to %t, GateDefaults to %t", controller, version, d.Gate, g.Defaults[d.Gate], since)
			}
		}
	}
	if n == 0 {
		t.Fatal("nothing compared")
	}
}

// TestGateTableAtTheTags: facts of the generated table at versions the
// module proxy here does not serve, read by hack/gengates at the
// controllers' git tags, each checked by hand in the cited file.
func TestGateTableAtTheTags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		controller, version, gate string
		// cite is the upstream file at that tag the fact is read in.
		cite string
		// known: the version is recorded; has: it has the gate; def: its default.
		known, has, def bool
	}{
		{"kustomize-controller", "v1.4.0", StrictSubstitution,
			"fluxcd/kustomize-controller v1.4.0 internal/features/features.go: StrictPostBuildSubstitutions: false (opt-in from v1.3)", true, true, false},
		{"kustomize-controller", "v1.8.5", StrictSubstitution,
			"fluxcd/kustomize-controller v1.8.5 internal/features/features.go: StrictPostBuildSubstitutions: false", true, true, false},
		{"kustomize-controller", "v1.9.1", StrictSubstitution,
			"fluxcd/kustomize-controller v1.9.0 and v1.9.1 internal/features/features.go: StrictPostBuildSubstitutions: true (opt-out from v1.9)", true, true, true},
		{"kustomize-controller", "v1.2.2", StrictSubstitution,
			"fluxcd/kustomize-controller v1.2.2 internal/features/features.go: no such gate (added in v1.3)", true, false, false},
		{"kustomize-controller", "v1.4.0", ExternalArtifact,
			"fluxcd/kustomize-controller v1.4.0 internal/features/features.go: no such gate (added in v1.7)", true, false, false},
		{"kustomize-controller", "v1.5.1", "ObjectLevelWorkloadIdentity",
			"fluxcd/kustomize-controller v1.5.1 internal/features/features.go: no init calling auth.SetFeatureGates", true, false, false},
		{"kustomize-controller", "v1.6.0", "ObjectLevelWorkloadIdentity",
			"fluxcd/kustomize-controller v1.6.0 internal/features/features.go init: auth.SetFeatureGates(features) (fluxcd/pkg auth, off)", true, true, false},
		{"kustomize-controller", "v1.4.0", "DisableStatusPollerCache",
			"fluxcd/kustomize-controller v1.4.0 internal/features/features.go: DisableStatusPollerCache: true (opt-out from v1.2)", true, true, true},
		{"helm-controller", "v0.37.4", "AdoptLegacyReleases",
			"fluxcd/helm-controller v0.37.4 internal/features/features.go: AdoptLegacyReleases: true", true, true, true},
		{"helm-controller", "v0.37.4", "DetectDrift",
			"fluxcd/helm-controller v0.37.4 internal/features/features.go: DetectDrift: false", true, true, false},
		{"helm-controller", "v1.0.1", "AdditiveCELDependencyCheck",
			"fluxcd/helm-controller v1.0.1 internal/features/features.go: no such gate (opt-in from v1.4.0)", true, false, false},
		{"helm-controller", "v1.4.0", "AdditiveCELDependencyCheck",
			"fluxcd/helm-controller v1.4.0 internal/features/features.go: AdditiveCELDependencyCheck: false", true, true, false},
		{"source-watcher", "v2.1.0", "DirectSourceFetch",
			"fluxcd/source-watcher v2.1.0 internal/features/features.go: controller.FeatureGateDirectSourceFetch: false (fluxcd/pkg runtime/controller)", true, true, false},
		// Not in the mirror used (its newest tag is v1.9.3) nor served by
		// the proxy: not recorded, so nothing is claimed.
		{"notification-controller", "v1.9.4", "", "no tag v1.9.4 in the mirror; the module proxy refuses it", false, false, false},
	} {
		t.Run(tc.controller+"@"+tc.version+"/"+tc.gate, func(t *testing.T) {
			t.Parallel()
			g := SupportedGates(tc.controller, tc.version)
			if g.Known != tc.known {
				t.Fatalf("known %t, want %t (%s)", g.Known, tc.known, tc.cite)
			}
			if !tc.known {
				return
			}
			def, has := g.Defaults[tc.gate]
			if has != tc.has || def != tc.def {
				t.Errorf("has %t default %t, want %t %t (%s); run go run ./hack/gengates", has, def, tc.has, tc.def, tc.cite)
			}
			if e := EffectiveGate(tc.controller, tc.version, Flags{}, tc.gate); e.Unsupported == tc.has {
				t.Errorf("EffectiveGate: Unsupported %t for a gate the version has=%t", e.Unsupported, tc.has)
			}
		})
	}
	// source-watcher v2.0.1 cmd/main.go binds --feature-gates but never
	// calls SupportedFeatures: any name is accepted, none is read.
	if g := SupportedGates("source-watcher", "v2.0.1"); !g.Known || !g.AnyName || len(g.Defaults) != 0 {
		t.Errorf("source-watcher v2.0.1: %+v, want known, any name, no gates", g)
	}
	if e := EffectiveGate("source-watcher", "v2.0.1", Flags{}, "Whatever"); e.Unsupported {
		t.Error("source-watcher v2.0.1 refuses no gate name")
	}
}

// TestGateTableCoversTheBundles: every (controller, version) a Flux
// controller image of the embedded bundles names has a line in the table,
// and at most the 7 versions no mirror tag or module gave (see
// docs/commands.md) are unavailable.
func TestGateTableCoversTheBundles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "components", "bundles", "v*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no extracted bundles (pkg/components/bundles/flux is committed; restore it with git): the table's coverage is not compared")
	}
	imageRE := regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*["']?([^\s"'#]+)`)
	deployed := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imageRE.FindAllStringSubmatch(string(data), -1) {
			repo, _, _ := strings.Cut(m[1], "@")
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i]
			}
			if path.Base(path.Dir(repo)) == "fluxcd" && strings.Contains(path.Base(repo), "-") {
				deployed[path.Base(repo)+"@"+ImageVersion(m[1])] = true
			}
		}
	}
	if len(deployed) < 100 {
		t.Fatalf("only %d controller versions found in %d bundle files", len(deployed), len(files))
	}
	var unavailable []string
	for key := range deployed {
		g, ok := parsedGates()[key]
		switch {
		case !ok:
			t.Errorf("%s: deployed by a bundle, no line in gatedefaults.txt; run go run ./hack/gengates", key)
		case !g.Known:
			unavailable = append(unavailable, key)
		}
	}
	slices.Sort(unavailable)
	if len(unavailable) > 7 {
		t.Errorf("%d of %d versions unavailable, want at most 7: %v; regenerate with go run ./hack/gengates -mirrors DIR", len(unavailable), len(deployed), unavailable)
	}
}
