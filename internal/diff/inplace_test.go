package diff

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// TestDiffCommittedTreeRules: the committed trees are loaded in place
// (fluxrepo.LoadInPlace, not copied again), and the copy's rules still
// hold on them: an alias bomb committed at head fails the Kustomization
// reading it, as check says; a file over the read bound is left out of
// the build and said so. Both revisions are commits, so both load in
// place; with two cluster roots, the first root's loads copy and the
// last's take the trees over — each root sees the tree as committed.
func TestDiffCommittedTreeRules(t *testing.T) {
	var laughs strings.Builder
	laughs.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n  namespace: default\ndata:\n  x: y\nx-values:\n  l0: &l0 [lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&laughs, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  x: " + strings.Repeat("x", fluxrepo.DefaultMaxFileBytes) + "\n"
	infraKs := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cilium.yaml\n  - big.yaml\n"
	for _, tc := range []struct {
		name       string
		base, head map[string]string
		want       []string
		fail       bool
	}{
		{name: "an alias bomb at head: FAIL",
			head: map[string]string{"infra/laughs.yaml": laughs.String()},
			want: []string{"FAIL Kustomization flux-system/infra (changed)", "infra/laughs.yaml:", "its aliases expand"},
			fail: true},
		{name: "a file over the bound: left out, said",
			base: map[string]string{"infra/kustomization.yaml": infraKs, "infra/big.yaml": big},
			head: map[string]string{"infra/big.yaml": strings.Replace(big, "name: big", "name: bigger", 1)},
			want: []string{"1 entr(ies) cannot be read offline", "cluster clusters/dev: unchanged"}},
		{name: "two roots, each sees the committed tree",
			base: map[string]string{"clusters/prod/sync.yaml": strings.Replace(readSeed(t, "clusters/dev/sync.yaml"), "./clusters/dev", "./clusters/prod", 1), "clusters/prod/vars.yaml": readSeed(t, "clusters/dev/vars.yaml"), "clusters/prod/infra.yaml": readSeed(t, "clusters/dev/infra.yaml")},
			head: map[string]string{"infra/laughs.yaml": laughs.String()},
			want: []string{"cluster clusters/dev", "cluster clusters/prod", "infra/laughs.yaml:", "its aliases expand"},
			fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := twoCommits(t, tc.base, tc.head)
			res, err := Run(context.Background(), Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", FluxVersion: "v2.9.5"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteText(&out, res); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in:\n%s", w, out.String())
				}
			}
			if _, prod, two := strings.Cut(out.String(), "cluster clusters/prod"); two && !strings.Contains(prod, "its aliases expand") {
				t.Errorf("want the bomb refused at clusters/prod too (the tree as committed):\n%s", out.String())
			}
			if res.Failed() != tc.fail {
				t.Errorf("Failed() = %t, want %t", res.Failed(), tc.fail)
			}
		})
	}
}
