//go:build e2e

package e2e

// The homelab script's step 1, done its way — the release's components
// (`flux install --export`, here `bootstrap render --plain`), the components
// kustomization copied next to them, built by a kubectl from the pinned
// Kubernetes tag (`kubectl kustomize`) — against `bootstrap render
// --overlays` of the same directory: the same objects, one by one.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	ssautils "github.com/fluxcd/pkg/ssa/utils"
)

func TestScriptPathEqualsRender(t *testing.T) {
	kubectl := filepath.Join(suite.binDir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl is built by hack/sandbox/build.sh: %v", err)
	}
	overlay := filepath.Join(suite.root, "internal", "customize", "testdata", "overlays", "flux-convention")
	for _, version := range []string{"v2.4.0", "v2.9.5"} {
		t.Run(version, func(t *testing.T) {
			extras := []string{"--flux-version", version, "--components-extra", "image-reflector-controller,image-automation-controller"}
			// The script's way.
			dir := t.TempDir()
			plain := exec.Command(bootstrapCLI(t), append([]string{"render", "--plain", "--output-dir", dir}, extras...)...)
			if out, err := plain.CombinedOutput(); err != nil {
				t.Fatalf("render --plain: %v\n%s", err, out)
			}
			if err := os.CopyFS(dir, os.DirFS(overlay)); err != nil {
				t.Fatal(err)
			}
			var stock, stderr bytes.Buffer
			kz := exec.Command(kubectl, "kustomize", dir)
			kz.Stdout, kz.Stderr = &stock, &stderr
			if err := kz.Run(); err != nil {
				t.Fatalf("kubectl kustomize: %v\n%s", err, stderr.String())
			}
			// bootstrap's way.
			ours := render(t, append([]string{"--overlays", overlay}, extras...)...)
			theirs, err := ssautils.ReadObjects(bytes.NewReader(stock.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			index := func(objs []map[string]any) map[string]map[string]any {
				m := map[string]map[string]any{}
				for _, o := range objs {
					meta := o["metadata"].(map[string]any)
					ns, _ := meta["namespace"].(string)
					m[o["kind"].(string)+"/"+ns+"/"+meta["name"].(string)] = o
				}
				return m
			}
			var a, b []map[string]any
			for _, o := range ours {
				a = append(a, o.Object)
			}
			for _, o := range theirs {
				b = append(b, o.Object)
			}
			oursBy, stockBy := index(a), index(b)
			if len(oursBy) != len(stockBy) || len(oursBy) < 30 {
				t.Fatalf("bootstrap rendered %d objects, kubectl kustomize %d", len(oursBy), len(stockBy))
			}
			for id, o := range stockBy {
				mine, ok := oursBy[id]
				if !ok {
					t.Errorf("%s: built by kubectl kustomize, missing from bootstrap render", id)
					continue
				}
				if !reflect.DeepEqual(normal(t, mine), normal(t, o)) {
					x, _ := json.MarshalIndent(mine, "", " ")
					y, _ := json.MarshalIndent(o, "", " ")
					t.Errorf("%s differs:\nbootstrap: %s\nkubectl:   %s", id, x, y)
				}
			}
			// The comparison can fail: the render without the overlay
			// differs from the script's output at kustomize-controller.
			plainObjs := render(t, append([]string{"--plain"}, extras...)...)
			for _, o := range plainObjs {
				if o.GetKind() == "Deployment" && o.GetName() == "kustomize-controller" &&
					reflect.DeepEqual(normal(t, o.Object), normal(t, stockBy["Deployment/flux-system/kustomize-controller"])) {
					t.Fatal("negative control: the render without the overlay equals the script's output")
				}
			}
			t.Logf("Flux %s: %d objects, bootstrap render --overlays equals kubectl kustomize object by object", version, len(stockBy))
		})
	}
}

// normal round-trips an object through JSON so number types compare equal.
func normal(t *testing.T, o map[string]any) any {
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
