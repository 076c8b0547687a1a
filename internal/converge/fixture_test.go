package converge_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

// TestHomelabFixtureGraph: the fixture's environments are graphs like a
// real one: at least 10 Kustomizations over at least 4 levels of dependsOn,
// two sources with edges across them, and the graph gate passes.
func TestHomelabFixtureGraph(t *testing.T) {
	for _, env := range []string{"dev", "prod"} {
		r, err := rootsync.Build(rootsync.Options{Repo: "../../testdata/homelab", Path: "clusters/" + env, Namespace: "flux-system", RootName: "flux-system"})
		if err != nil {
			t.Fatal(err)
		}
		g := fluxgraph.New(r.Kustomizations, converge.NodeID{Namespace: "flux-system", Name: "flux-system"}, "flux-system")
		if c := converge.GraphCheck(g, "clusters/"+env); c.Verdict != "pass" {
			t.Fatalf("%s: %s %s %v", env, c.Verdict, c.Message, c.Evidence)
		}
		depth := 0
		for _, l := range g.Levels() {
			depth = max(depth, l+1)
		}
		cross := 0
		for _, id := range g.IDs {
			for _, d := range g.Nodes[id].DependsOn {
				if g.Nodes[d].Source != g.Nodes[id].Source {
					cross++
				}
			}
		}
		if len(g.Nodes) < 10 || depth < 4 || len(g.Sources()) < 2 || cross == 0 {
			t.Fatalf("%s: %d nodes, %d levels, %d sources, %d cross-source edges", env, len(g.Nodes), depth, len(g.Sources()), cross)
		}
		var shared int
		for _, o := range r.Objects {
			if o.GetKind() == "GitRepository" && o.GetName() == "shared" {
				if u, _, _ := unstructured.NestedString(o.Object, "spec", "url"); u == "https://git.example.invalid/homelab/shared.git" {
					t.Errorf("%s: the shared source kept the base URL: the environment's source.yaml patch did not apply", env)
				}
				shared++
			}
		}
		if shared != 1 {
			t.Errorf("%s: %d shared GitRepositories", env, shared)
		}
		t.Logf("%s: %s", env, converge.GraphCheck(g, env).Message)
	}
}

// TestHelmFixtureGraph: the HelmRelease fixture's graph as the walk uses
// it (flow.Declare's DeclaredHelmReleases): each HelmRelease after the
// Kustomization that applies it and after its dependsOn (across
// namespaces), chains across both kinds, the graph gate passing.
func TestHelmFixtureGraph(t *testing.T) {
	r, err := rootsync.Build(rootsync.Options{Repo: "../../testdata/helm", Path: "clusters/dev", Namespace: "flux-system", RootName: "flux-system"})
	if err != nil {
		t.Fatal(err)
	}
	g := fluxgraph.NewWithHelmReleases(r.Kustomizations, converge.DeclaredHelmReleases(r.Env), converge.NodeID{Namespace: "flux-system", Name: "flux-system"}, "flux-system")
	if c := converge.GraphCheck(g, "clusters/dev"); c.Verdict != "pass" || !strings.HasPrefix(c.Message, "4 Kustomization(s) and 4 HelmRelease(s) over 6 level(s)") {
		t.Fatalf("%s %s %v", c.Verdict, c.Message, c.Evidence)
	}
	want := map[string]string{
		"HelmRelease/kube-system/cilium":    "flux-system/cilium",
		"HelmRelease/platform/issuers":      "flux-system/platform,HelmRelease/platform/cert-manager",
		"HelmRelease/apps/web":              "flux-system/apps,HelmRelease/platform/issuers",
		"HelmRelease/platform/cert-manager": "flux-system/platform",
	}
	for node, prereqs := range want {
		id, _ := fluxgraph.ParseID(node)
		var got []string
		for _, p := range g.Prereqs(id) {
			got = append(got, p.String())
		}
		if strings.Join(got, ",") != prereqs {
			t.Errorf("Prereqs(%s) = %v, want %s", node, got, prereqs)
		}
	}
	if lv := g.Levels(); lv[fluxgraph.HelmReleaseID(fluxobj.Key{Namespace: "apps", Name: "web"})] != 5 {
		t.Errorf("apps/web at level %d, want 5: root 0, cilium 1, platform 2, cert-manager 3, issuers 4", lv[fluxgraph.HelmReleaseID(fluxobj.Key{Namespace: "apps", Name: "web"})])
	}
}
