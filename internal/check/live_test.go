package check

import (
	"context"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestLiveRoots: two roots of one repository that run on one cluster (a
// migration: the Taskfile root flux-system/cluster applies a FluxInstance
// whose sync path is another directory, and renders the HelmRepository
// the instance's HelmReleases read) are judged together (issue 54 item
// 4): the instance's root alone would find the chart source missing.
// helm-controller v1.6.4 reads a chart source by reference from the
// cluster, whoever applied it.
func TestLiveRoots(t *testing.T) {
	t.Parallel()
	instance := edit{"kubernetes/flux/config/instance.yaml", "", "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  distribution:\n    version: 2.9.x\n    registry: ghcr.io/fluxcd\n  sync:\n    kind: GitRepository\n    url: https://git.example.invalid/owner/home-ops.git\n    ref: refs/heads/main\n    path: kubernetes/main\n"}
	repo := edit{"kubernetes/flux/config/repos.yaml", "", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: https://charts.example.invalid\n"}
	listed := edit{"kubernetes/flux/config/kustomization.yaml", "  - ./cluster.yaml\n", "  - ./cluster.yaml\n  - ./instance.yaml\n  - ./repos.yaml\n"}
	main := edit{"kubernetes/main/apps.yaml", "", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: default\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: podinfo\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n        namespace: flux-system\n"}
	for _, tc := range []struct {
		name    string
		edits   []edit
		verdict verify.Verdict
		want    string
	}{
		{"the other root renders the chart source", []edit{instance, repo, listed, main}, verify.Pass, "judged with root(s) kubernetes/flux, which run on the same cluster"},
		// The negative: nothing renders it, on either root.
		{"no root renders the chart source", []edit{instance, listed, {"kubernetes/flux/config/repos.yaml", "", "---\n"}, main}, verify.Fail, "HelmRelease default/podinfo reads its chart from HelmRepository/flux-system/charts, which the environment does not render"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyLayout(t, "taskfile", tc.edits...)
			o := Options{Options: fluxrepo.Options{Repo: dir}, NoCompare: true}
			roots, _, err := fluxrepo.Discover(dir, o.Options)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, r := range roots {
				paths = append(paths, r.Path)
			}
			if strings.Join(paths, ",") != "kubernetes/flux,kubernetes/main" {
				t.Fatalf("roots %v, want kubernetes/flux and kubernetes/main", paths)
			}
			e := &Every{Options: o, Roots: roots}
			run := &pipeline.Run{Report: verify.NewReport("check")}
			cs, err := e.Before(context.Background(), run)
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(cs...)
			c := checkOf(rep, ClusterPrefix("kubernetes/main")+Graph.ID)
			if c.Verdict != tc.verdict || !strings.Contains(text(c), tc.want) {
				t.Fatalf("kubernetes/main's check.graph: want %s with %q:\n%s", tc.verdict, tc.want, dump(rep))
			}
		})
	}
}
