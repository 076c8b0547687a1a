package check

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Every declares check.clusters and each root's gates under its prefix, so
// the pipeline names every gate of a cluster that did not run; a family
// stays a family (its members' IDs begin with the prefixed ID and "/").
func TestEveryGates(t *testing.T) {
	t.Parallel()
	e := &Every{Roots: []fluxrepo.Root{{Path: "clusters/dev"}, {Path: "kubernetes/edge"}}}
	gates := e.Gates()
	if len(gates) != 1+2*len(Gates()) || gates[0].ID != Clusters.ID {
		t.Fatalf("gates: %v", gates)
	}
	ids := make([]string, len(gates))
	for i, g := range gates {
		ids[i] = g.ID
	}
	for _, want := range []string{"clusters.dev:check.render", "kubernetes.edge:check.graph", "kubernetes.edge:check.substitution"} {
		if !slices.Contains(ids, want) {
			t.Errorf("no gate %s in %v", want, ids)
		}
	}
	member := verify.Check{ID: "clusters.dev:check.substitution/flux-system/apps", Verdict: verify.Pass}
	for _, c := range verify.Missing(gates, []verify.Check{member}, "not run") {
		if c.ID == "clusters.dev:check.substitution" {
			t.Errorf("the family clusters.dev:check.substitution is reported missing though a member ran")
		}
	}
	if got := ClusterPrefix("clusters/dev"); got != "clusters.dev:" {
		t.Errorf("ClusterPrefix = %q", got)
	}
}

// labRoot is a self-applying root Kustomization flux-system/lab (the
// Taskfile bootstrap's shape): in kubernetes/lab/config, applying
// kubernetes/lab, reading the GitRepository lab it declares.
const labRoot = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: lab
  namespace: flux-system
spec:
  interval: 1m
  ref:
    branch: main
  url: https://git.example.invalid/owner/multi.git
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: lab
  namespace: flux-system
spec:
  interval: 10m
  path: ./kubernetes/lab
  prune: true
  sourceRef:
    kind: GitRepository
    name: lab
`

// withLab adds labRoot to repo, in kubernetes/lab/config.
func withLab(t *testing.T, repo string) string {
	t.Helper()
	dir := filepath.Join(repo, "kubernetes", "lab", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, c := range map[string]string{"cluster.yaml": labRoot, "../config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lab\n  namespace: default\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// Every checks each root by its own root Kustomization: a self-applying
// root of another name (the Taskfile layout's flux-system/cluster) is
// found without --path and checked as its root, beside the default-named
// roots of the same repository, each once.
func TestEveryRootNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, repo string
		// clusters is check.clusters' message; graphs are each root's
		// check.graph message.
		clusters string
		graphs   map[string]string
	}{
		{name: "the Taskfile layout", repo: copyLayout(t, "taskfile"),
			clusters: "1 cluster root(s) found, each checked by itself: kubernetes/flux (self-applying root Kustomization at kubernetes/flux/config/cluster.yaml:25; root flux-system/cluster)",
			graphs:   map[string]string{"kubernetes.flux:check.graph": "root flux-system/cluster (rendered by the root directory) applies kubernetes/flux; 3 Kustomization(s)"}},
		{name: "both forms in one repository", repo: withLab(t, copyLayout(t, "multi")),
			clusters: "4 cluster root(s) found, each checked by itself: clusters/dev (root Kustomization at clusters/dev/sync.yaml:8), clusters/prod (flux bootstrap gotk-sync.yaml at clusters/prod/flux-system/gotk-sync.yaml:23), kubernetes/edge (FluxInstance spec.sync.path at bootstrap/flux-instance.yaml:16), kubernetes/lab (self-applying root Kustomization at kubernetes/lab/config/cluster.yaml:19; root flux-system/lab)",
			graphs: map[string]string{"clusters.dev:check.graph": "root flux-system/flux-system (rendered by the root directory) applies clusters/dev",
				"kubernetes.lab:check.graph": "root flux-system/lab (rendered by the root directory) applies kubernetes/lab; 1 Kustomization(s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			roots, notes, err := fluxrepo.Discover(tc.repo, fluxrepo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			e := &Every{Options: Options{Options: fluxrepo.Options{Repo: tc.repo}}, Roots: roots, Notes: notes}
			if err := pipeline.Execute(context.Background(), &pipeline.Run{Report: rep}, e); err != nil {
				t.Fatal(err)
			}
			if c := checkOf(rep, Clusters.ID); c.Message != tc.clusters {
				t.Errorf("check.clusters: %q\nwant %q", c.Message, tc.clusters)
			}
			for id, want := range tc.graphs {
				if c := checkOf(rep, id); c.Verdict != verify.Pass || !strings.HasPrefix(c.Message, want) {
					t.Errorf("%s: want a pass beginning %q:\n%s", id, want, dump(rep))
				}
			}
		})
	}
}
