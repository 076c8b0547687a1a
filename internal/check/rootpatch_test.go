package check

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestPatchedRootJudged: check judges the root a FluxInstance declares as
// the Flux Operator creates it, its spec.kustomize.patches applied
// (testdata/layouts/instance-patches with a Kustomization that depends on
// the root): a patch adding wait: true to the root is root-wait's deadlock;
// without that patch the same repository has none.
func TestPatchedRootJudged(t *testing.T) {
	t.Parallel()
	apps := edit{"clusters/staging/apps.yaml", "", `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  dependsOn:
    - name: flux-system
  sourceRef:
    kind: OCIRepository
    name: flux-system
`}
	listed := edit{"clusters/staging/kustomization.yaml", "  - config.yaml\n", "  - config.yaml\n  - apps.yaml\n"}
	wait := edit{"flux/instance.yaml", "            value: 3m\n", "            value: 3m\n          - op: add\n            path: /spec/wait\n            value: true\n"}
	for _, tt := range []struct {
		name    string
		edits   []edit
		verdict verify.Verdict
		// det: want is in a finding of det ("": in the check's text).
		det  verify.Detector
		want string
	}{
		{"the patch makes the root wait", []edit{apps, listed, wait}, verify.Fail,
			RootWait, "the root Kustomization flux-system/flux-system has wait: true: it health-checks Kustomization flux-system/apps, which depend(s) on it"},
		{"no wait patch", []edit{apps, listed}, verify.Pass, "", "root flux-system/flux-system"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo := copyLayout(t, "instance-patches", tt.edits...)
			// apps' path: a directory that builds, empty.
			if err := os.MkdirAll(filepath.Join(repo, "apps"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, "apps", "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/staging"}})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			for _, c := range rep.Checks {
				if c.ID == "check.graph" {
					if c.Verdict != tt.verdict || !holds(c, tt.det, tt.want) {
						t.Fatalf("want check.graph %s with %q (detector %q); got:\n%s", tt.verdict, tt.want, tt.det, dump(rep))
					}
					return
				}
			}
			t.Fatalf("no check.graph:\n%s", dump(rep))
		})
	}
}
