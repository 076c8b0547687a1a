package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/gate"
)

// genRepo writes an environment with n Kustomizations, each substituting
// from cluster-vars over perK objects (in a directory without a
// kustomization.yaml, so the generator runs for each).
func genRepo(tb testing.TB, n, perK int) string {
	tb.Helper()
	dir := tb.TempDir()
	write := func(p, s string) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	write("clusters/bench/kustomization.yaml", "resources:\n  - sync.yaml\n  - vars.yaml\n  - ks.yaml\n")
	write("clusters/bench/sync.yaml", `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: https://git.example.invalid/bench.git, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/bench, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`)
	write("clusters/bench/vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata:\n  domain: bench.example.invalid\n  replicas: \"2\"\n")
	var ks strings.Builder
	for i := range n {
		fmt.Fprintf(&ks, `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app-%03d, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/app-%03d
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  dependsOn: [{name: flux-system}]
  postBuild:
    substituteFrom: [{kind: ConfigMap, name: cluster-vars}]
`, i, i)
		var objs strings.Builder
		for j := range perK {
			fmt.Fprintf(&objs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d, namespace: app-%03d}\ndata:\n  url: \"https://app-%03d.${domain}\"\n  replicas: \"${replicas}\"\n  script: |\n    # on ${domain}\n    echo $${HOME}\n", j, i, i)
		}
		write(fmt.Sprintf("apps/app-%03d/objects.yaml", i), objs.String())
	}
	write("clusters/bench/ks.yaml", ks.String())
	return dir
}

func BenchmarkCheck(b *testing.B) {
	repo := genRepo(b, 500, 10)
	o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/bench"}, NoCompare: true}
	b.ResetTimer()
	for b.Loop() {
		r, err := Run(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		rep := gate.NewReport("check")
		rep.Add(r.Checks...)
		if rep.ExitCode() != gate.ExitOK || len(r.Env.Kustomizations) != 501 {
			var s strings.Builder
			_ = gate.WriteText(&s, rep)
			b.Fatalf("exit %d, %d Kustomizations\n%s", rep.ExitCode(), len(r.Env.Kustomizations), s.String()[:min(4000, s.Len())])
		}
	}
}

// The generated repository is itself checked: clean, then one defect found.
func TestGeneratedRepo(t *testing.T) {
	repo := genRepo(t, 20, 3)
	o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/bench"}, NoCompare: true}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 {
		t.Fatalf("findings on the generated repository: %+v", r.Findings)
	}
	p := filepath.Join(repo, "apps/app-007/objects.yaml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "${replicas}", "${replica}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Gate != "check.substitution/flux-system/app-007" || r.Findings[0].File != "apps/app-007/objects.yaml" || r.Findings[0].Line != 7 {
		t.Fatalf("findings: %+v", r.Findings)
	}
}
