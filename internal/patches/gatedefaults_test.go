package patches

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
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
