package fluxrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadAheadSameAsSequential: the walk building ahead, concurrently
// (ahead.go), loads what it loads one build after another — the same
// Kustomizations in the same order, the same objects, files read, notes,
// failures and repairs (issue 45 items 2, 10) — with builds that fail and
// are repaired on the copy among those running ahead. And the builds
// really ran ahead.
func TestLoadAheadSameAsSequential(t *testing.T) {
	repo := copyTree(t, clean)
	write := func(t *testing.T, repo, file, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, file)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, filepath.FromSlash(file)), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var many strings.Builder
	for i := range 12 {
		fmt.Fprintf(&many, "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app-%02d, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./many/app-%02d\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n  postBuild:\n    substitute: {APP: app-%02d}\n", i, i, i)
		dir := fmt.Sprintf("many/app-%02d/", i)
		write(t, repo, dir+"cm.yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-%02d, namespace: default}\ndata:\n  app: ${APP}\n", i))
		switch i % 4 {
		case 0: // no kustomization.yaml: the generated one
		case 1: // a missing file: a failure, repaired on the copy
			write(t, repo, dir+"kustomization.yaml", "resources:\n- cm.yaml\n- ../shared\n- gone.yaml\n")
		case 2: // a Kustomization below, built at the next level
			write(t, repo, dir+"kustomization.yaml", "resources:\n- cm.yaml\n- child.yaml\n- ../shared\n")
			write(t, repo, dir+"child.yaml", fmt.Sprintf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: child-%02d, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./many/app-%02d/child\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n", i, i))
			write(t, repo, dir+"child/cm.yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: child-%02d, namespace: default}\n", i))
		case 3: // the shared base, a generator, a file that does not decode
			write(t, repo, dir+"kustomization.yaml", "resources:\n- cm.yaml\n- ../shared\n- bad.yaml\nconfigMapGenerator:\n- name: gen\n  files: [cm.yaml]\n")
			write(t, repo, dir+"bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {app: ${APP}}\n")
		}
	}
	write(t, repo, "many/shared/kustomization.yaml", "resources:\n- sa.yaml\n")
	write(t, repo, "many/shared/sa.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: shared}\n")
	write(t, repo, "clusters/base/many.yaml", many.String())
	write(t, repo, "clusters/base/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system/gotk-source.yaml\n  - infrastructure.yaml\n  - apps.yaml\n  - many.yaml\n")

	load := func(sequential bool) (string, *Env) {
		noAhead = sequential
		defer func() { noAhead = false }()
		e, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true, Holes: true})
		if err != nil {
			t.Fatal(err)
		}
		return digest(t, e), e
	}
	want, _ := load(true)
	for range 3 { // a race would show in some run
		before := workerBuilds.Load()
		got, e := load(false)
		if workerBuilds.Load() == before {
			t.Fatal("no build ran ahead")
		}
		if got != want {
			g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
			for i := range min(len(g), len(w)) {
				if g[i] != w[i] {
					t.Fatalf("line %d: ahead\n%s\nsequential\n%s", i, g[i], w[i])
				}
			}
			t.Fatalf("ahead:\n%s\nsequential:\n%s", got, want)
		}
		if e.Kustomization("flux-system", "child-02") == nil || !e.Kustomization("flux-system", "child-02").Built {
			t.Fatalf("child-02 not built:\n%s", got)
		}
		if k := e.Kustomization("flux-system", "app-01"); k == nil || k.Err == nil || len(k.Repaired) != 1 || !k.Built {
			t.Fatalf("app-01 not failed and repaired:\n%s", got)
		}
	}
}

// digest writes what a load found, in its order.
func digest(t *testing.T, e *Env) string {
	t.Helper()
	var b strings.Builder
	for _, k := range e.Kustomizations {
		fmt.Fprintf(&b, "%s built=%v err=%v note=%q files=%v repaired=%v oncefixed=%v\n", k.Ref(), k.Built, k.Err, k.Note, k.Files, holeList(k.Repaired), k.OnceFixed)
		for _, r := range k.Resources {
			y, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			b.Write(y)
		}
	}
	fmt.Fprintf(&b, "notes: %q\nholes: %d\n", e.Notes, len(e.Holes))
	return b.String()
}
