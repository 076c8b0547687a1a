package fluxrepo

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// reuseFixture is a small repository with each way a build's inputs reach
// it: a kustomization file (plain), a directory without one (gen: the
// generated kustomization lists its files), a component of the
// Kustomization's spec (comp), a configMapGenerator's file (cmgen), and
// one nothing changes (other).
var reuseFixture = map[string]string{
	"clusters/dev/flux-system/gotk-sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: https://git.example.invalid/r.git, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
	"clusters/dev/apps.yaml": reuseKs("plain", "") + "---\n" + reuseKs("gen", "") + "---\n" +
		reuseKs("comp", "  components: [../../components/c]\n") + "---\n" + reuseKs("cmgen", "") + "---\n" + reuseKs("other", ""),
	"apps/plain/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n",
	"apps/plain/cm.yaml":            reuseCM("plain"),
	"apps/gen/a.yaml":               reuseCM("gen-a"),
	"apps/comp/kustomization.yaml":  "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n",
	"apps/comp/cm.yaml":             reuseCM("comp"),
	"components/c/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n" +
		"patches:\n  - target: {kind: ConfigMap}\n    patch: |\n      - op: add\n        path: /data/c\n        value: from-component\n",
	"apps/cmgen/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nconfigMapGenerator:\n  - name: conf\n    files: [conf.txt]\n",
	"apps/cmgen/conf.txt":           "one\n",
	"apps/other/cm.yaml":            reuseCM("other"),
}

// brokenPlain lists a file that is not there: the build fails and is
// repaired (the entry left out).
const brokenPlain = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml, missing.yaml]\n"

func reuseKs(name, extra string) string {
	return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: flux-system}\n" +
		"spec:\n  interval: 1h\n  path: ./apps/" + name + "\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n" + extra
}

func reuseCM(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: default}\ndata: {x: y}\n"
}

// TestBuildReuse loads the fixture (base, recording its builds), then a
// changed copy of it (head) with and without taking base's builds: the two
// heads are the same, and exactly the builds whose inputs changed run
// again — every other is taken from base.
func TestBuildReuse(t *testing.T) {
	all := []string{"clusters/dev", "apps/plain", "apps/gen", "apps/comp", "apps/cmgen", "apps/other"}
	cases := []struct {
		name    string
		change  func(files map[string]string)
		rebuilt []string // the builds that must not be reused
	}{
		{"nothing changed", func(map[string]string) {}, nil},
		{"a file added in a directory the generator lists", func(f map[string]string) { f["apps/gen/b.yaml"] = reuseCM("gen-b") },
			[]string{"apps/gen"}},
		{"a file of a generated directory changed", func(f map[string]string) { f["apps/gen/a.yaml"] = strings.Replace(reuseCM("gen-a"), "x: y", "x: z", 1) },
			[]string{"apps/gen"}},
		{"kustomization.yaml renamed to Kustomization", func(f map[string]string) {
			f["apps/plain/Kustomization"] = f["apps/plain/kustomization.yaml"]
			delete(f, "apps/plain/kustomization.yaml")
		}, []string{"apps/plain"}},
		{"a component's file changed", func(f map[string]string) {
			f["components/c/kustomization.yaml"] = strings.Replace(f["components/c/kustomization.yaml"], "from-component", "changed", 1)
		}, []string{"apps/comp"}},
		{"a generator's input changed", func(f map[string]string) { f["apps/cmgen/conf.txt"] = "two\n" }, []string{"apps/cmgen"}},
		{"a referenced file changed", func(f map[string]string) {
			f["apps/plain/cm.yaml"] = strings.Replace(reuseCM("plain"), "x: y", "x: z", 1)
		},
			[]string{"apps/plain"}},
		{"the Kustomization's spec changed (a prefix the generated kustomization carries)", func(f map[string]string) {
			f["clusters/dev/apps.yaml"] = strings.Replace(f["clusters/dev/apps.yaml"], reuseKs("other", ""), reuseKs("other", "  namePrefix: p-\n"), 1)
		}, []string{"clusters/dev", "apps/other"}},
		{"a repair differing (base left out a missing entry, head has it)", func(f map[string]string) {
			f["apps/plain/kustomization.yaml"] = brokenPlain
			f["apps/plain/missing.yaml"] = reuseCM("missing")
		}, []string{"apps/plain"}},
		// The repair leaves out what base never had: the generated
		// kustomization (the file as the build reads it) and every other
		// answer are base's, so base's build is head's.
		{"a repair at head making base's inputs (reused)", func(f map[string]string) { f["apps/plain/kustomization.yaml"] = brokenPlain }, nil},
		{"an unread file added (reused)", func(f map[string]string) { f["apps/plain/README.md"] = "notes\n" }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			baseFiles := maps.Clone(reuseFixture)
			if strings.HasPrefix(tc.name, "a repair differing") {
				baseFiles["apps/plain/kustomization.yaml"] = brokenPlain
			}
			base := writeRepo(t, baseFiles)
			headFiles := maps.Clone(reuseFixture)
			tc.change(headFiles)
			head := writeRepo(t, headFiles)
			o := Options{Path: "clusters/dev", KeepGoing: true, Holes: true}

			builds := NewBuilds()
			bo := o
			bo.Repo, bo.RecordBuilds = base, builds
			if _, err := Load(bo); err != nil {
				t.Fatal(err)
			}
			// The root directory builds twice (as the root, then as the
			// root Kustomization's path).
			if n := builds.Recorded(); n != int64(len(all)+1) {
				t.Fatalf("recorded %d builds, want %d", n, len(all)+1)
			}
			ho := o
			ho.Repo = head
			want, err := Load(ho)
			if err != nil {
				t.Fatal(err)
			}
			ho.ReuseBuilds = builds
			got, err := Load(ho)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := envSummary(got), envSummary(want); g != w {
				t.Errorf("head with reuse differs from head built:\n%s\nwant:\n%s", g, w)
			}
			var reused []string
			for _, d := range all {
				if builds.reusedDirs[d] > 0 {
					reused = append(reused, d)
				}
			}
			wantReused := slices.DeleteFunc(slices.Clone(all), func(d string) bool { return slices.Contains(tc.rebuilt, d) })
			if !slices.Equal(reused, wantReused) {
				t.Errorf("reused %v, want %v (rebuilt: %v)", reused, wantReused, tc.rebuilt)
			}
			// The directories without a kustomization file: the
			// generator's result is taken when nothing below changed.
			for _, d := range []string{"apps/gen", "apps/other"} {
				changed := slices.ContainsFunc(slices.Collect(maps.Keys(headFiles)), func(f string) bool {
					return strings.HasPrefix(f, d+"/") && headFiles[f] != baseFiles[f]
				}) || slices.ContainsFunc(slices.Collect(maps.Keys(baseFiles)), func(f string) bool {
					_, ok := headFiles[f]
					return strings.HasPrefix(f, d+"/") && !ok
				}) || d == "apps/other" && strings.Contains(tc.name, "spec changed")
				if got := builds.reusedDirs["generator:"+d] > 0; got == changed {
					t.Errorf("%s: generator's result reused %v, want %v", d, got, !changed)
				}
			}

			// Base and head at once (Builds.Live, as bootstrap diff loads
			// them): head waits for each build base runs or has yet to
			// try, so it takes the same builds and loads the same.
			live := NewBuilds()
			finish := live.Live()
			bo.RecordBuilds = live
			ho.ReuseBuilds = live
			done := make(chan error, 1)
			go func() {
				defer finish()
				_, err := Load(bo)
				done <- err
			}()
			got, err = Load(ho)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if g, w := envSummary(got), envSummary(want); g != w {
				t.Errorf("live: head differs from head built:\n%s\nwant:\n%s", g, w)
			}
			reused = nil
			for _, d := range all {
				if live.reusedDirs[d] > 0 {
					reused = append(reused, d)
				}
			}
			if !slices.Equal(reused, wantReused) {
				t.Errorf("live: reused %v, want %v (rebuilt: %v)", reused, wantReused, tc.rebuilt)
			}
		})
	}
}

// A load taking from a live record waits for a build the recording load
// runs, not for one in a directory it built (under that key or another),
// and for one in a directory it never builds until it is over.
func TestLiveBuildsWait(t *testing.T) {
	t.Parallel()
	fsys := filesys.MakeFsInMemory()
	res := []*resource.Resource{appliedResource(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")}
	b := NewBuilds()
	finish := b.Live()
	running, failed, never := buildKey{dir: "running"}, buildKey{dir: "failed"}, buildKey{dir: "never"}

	ended := b.started(running)
	got := make(chan bool)
	go func() { _, _, ok := b.take(running, fsys, "/"); got <- ok }()
	select {
	case ok := <-got:
		t.Fatalf("took %v while the build ran: want a wait", ok)
	case <-time.After(50 * time.Millisecond):
	}
	b.record(running, newQueryFS(fsys, "/"), res, nil)
	ended()
	if !<-got {
		t.Fatal("the recorded build was not taken")
	}

	b.started(failed)() // tried, not recorded (a failed build)
	if _, _, ok := b.take(failed, fsys, "/"); ok {
		t.Fatal("took a build never recorded")
	}
	// Another key in a directory built (its kustomization file changed at
	// head): not waited for, built by the reusing load.
	if _, _, ok := b.take(buildKey{dir: "running", kdata: "changed"}, fsys, "/"); ok {
		t.Fatal("took a build of another key")
	}

	go func() { _, _, ok := b.take(never, fsys, "/"); got <- ok }()
	select {
	case <-got:
		t.Fatal("did not wait for a build the recording load may still run")
	case <-time.After(50 * time.Millisecond):
	}
	finish()
	if <-got {
		t.Fatal("took a build never recorded")
	}
}
