package fluxrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/benchshape"
)

// BenchmarkLoad loads a repository with the builds as Load makes them
// (buildBuiltinSchema when no kustomization sets openapi:) and with
// fluxkustomize.Build for every path, side by side in one run (go test
// -count runs each sub-benchmark N times in a row; docs/benchmarks.md's
// figures alternate whole runs instead). docs/benchmarks.md records what
// the fork saves.
func BenchmarkLoad(b *testing.B) {
	cases := []struct {
		name, repo, path, rootName string
		kustomizations             int
	}{
		{"homelab", "../../testdata/homelab", "clusters/prod", "", 0},
		{"generated-100", "", "clusters/bench", "", 101},
		// The real-shaped repository (internal/benchshape): its first
		// cluster, the Taskfile layout's root flux-system/cluster.
		{"real-shape", "", "kubernetes/flux", "cluster", 0},
	}
	for _, c := range cases {
		repo := c.repo
		switch {
		case c.name == "real-shape":
			repo = b.TempDir()
			st, err := benchshape.Write(repo)
			if err != nil {
				b.Fatal(err)
			}
			c.kustomizations = st.Kustomizations
		case repo == "":
			repo = genLoadRepo(b, c.kustomizations-1, 10)
		}
		for _, build := range []struct {
			name     string
			upstream bool
		}{{"fork", false}, {"upstream", true}} {
			b.Run(c.name+"/"+build.name, func(b *testing.B) {
				upstreamBuildOnly = build.upstream
				defer func() { upstreamBuildOnly = false }()
				for b.Loop() {
					e, err := Load(Options{Repo: repo, Path: c.path, RootName: c.rootName})
					if err != nil {
						b.Fatal(err)
					}
					if c.kustomizations > 0 && len(e.Kustomizations) != c.kustomizations {
						b.Fatalf("%d Kustomizations, want %d", len(e.Kustomizations), c.kustomizations)
					}
				}
			})
		}
	}
}

// genLoadRepo writes an environment with n Kustomizations of perK
// ConfigMaps each, in directories without a kustomization.yaml (the
// generator runs for each, as in BenchmarkCheck's repository).
func genLoadRepo(tb testing.TB, n, perK int) string {
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
	write("clusters/bench/kustomization.yaml", "resources:\n  - sync.yaml\n  - ks.yaml\n")
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
	var ks strings.Builder
	for i := range n {
		fmt.Fprintf(&ks, "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app-%03d, namespace: flux-system}\nspec: {interval: 10m, path: ./apps/app-%03d, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n", i, i)
		var objs strings.Builder
		for j := range perK {
			fmt.Fprintf(&objs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d, namespace: app-%03d}\ndata: {k: v}\n", j, i)
		}
		write(fmt.Sprintf("apps/app-%03d/objects.yaml", i), objs.String())
	}
	write("clusters/bench/ks.yaml", ks.String())
	return dir
}
