package diff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/homelab-ops/bootstrap/internal/benchshape"
	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// The homelab-shaped repository's size, as internal/check's
// BenchmarkCheckHomelabShape has it: 158 apps (160 Kustomizations with the
// root flux-system and cluster-apps), 110 of them HelmReleases.
const benchApps, benchHelm = 158, 110

// benchSync is the generated environment's root and its source.
const benchSync = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: https://git.example.invalid/bench.git, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/bench, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`

// genHomelab writes the homelab-shaped repository of internal/check's
// genHomelab (its plain shape; the generators there are test code of
// another package, so the shape is written again here, the same files):
// a generated root applying cluster-apps; apps/<ns>/kustomization.yaml
// listing each app's ks.yaml; every app Kustomization with a shared
// component reading ${TIMEZONE} and ${SECRET_DOMAIN} from cluster-vars
// (substituteFrom), postBuild.substitute APP; HelmReleases with their
// OCIRepository, or Deployments; dependsOn chains up to 4 deep.
func genHomelab(tb testing.TB, dir string, apps, helm int) {
	tb.Helper()
	write := func(p, s string) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	write("clusters/bench/flux-system/gotk-sync.yaml", benchSync)
	write("clusters/bench/vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\n  labels: {reconcile.fluxcd.io/watch: Enabled}\ndata:\n  SECRET_DOMAIN: bench.example.invalid\n  TIMEZONE: Etc/UTC\n")
	write("clusters/bench/apps.yaml", `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: cluster-apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  dependsOn: [{name: flux-system}]
`)
	write("components/common/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - ./settings.yaml\n")
	write("components/common/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${APP}-settings\ndata:\n  capacity: ${CAPACITY:=5Gi}\n  timezone: ${TIMEZONE}\n  host: ${APP}.${SECRET_DOMAIN}\n")
	const perNS = 15
	var nsList strings.Builder
	for i := range apps {
		ns, app := fmt.Sprintf("ns-%02d", i/perNS), fmt.Sprintf("app-%03d", i)
		if i%perNS == 0 {
			fmt.Fprintf(&nsList, "  - ./%s\n", ns)
		}
		dep := "  dependsOn: [{name: flux-system}]\n"
		if i%4 != 0 {
			dep = fmt.Sprintf("  dependsOn: [{name: app-%03d}]\n", i-1)
		}
		capacity := ""
		if i%2 == 0 {
			capacity = "      CAPACITY: 1Gi\n"
		}
		write(fmt.Sprintf("apps/%s/%s/ks.yaml", ns, app), fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %[1]s, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps/%[2]s/%[1]s/app
  prune: true
  wait: %[3]v
  targetNamespace: %[2]s
  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  components: [../../../../components/common]
%[4]s  postBuild:
    substitute:
      APP: %[1]s
%[5]s    substituteFrom: [{kind: ConfigMap, name: cluster-vars}]
`, app, ns, i%3 == 0, dep, capacity))
		if i < helm {
			write(fmt.Sprintf("apps/%s/%s/app/ocirepository.yaml", ns, app), fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: %s}\nspec:\n  interval: 1h\n  url: oci://registry.example.invalid/charts/app-template\n  ref: {tag: 4.0.0}\n  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}\n", app))
			write(fmt.Sprintf("apps/%s/%s/app/helmrelease.yaml", ns, app), fmt.Sprintf("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: %[1]s}\nspec:\n  interval: 1h\n  chartRef: {kind: OCIRepository, name: %[1]s}\n  values:\n    controllers:\n      %[1]s:\n        containers:\n          app:\n            image: {repository: ghcr.io/example/%[1]s, tag: 1.0.0}\n            env: {TZ: \"${TIMEZONE}\", HOST: \"%[1]s.${SECRET_DOMAIN}\"}\n", app))
		} else {
			write(fmt.Sprintf("apps/%s/%s/app/deployment.yaml", ns, app), fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %[1]s}\nspec:\n  selector: {matchLabels: {app: %[1]s}}\n  template:\n    metadata: {labels: {app: %[1]s}}\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/example/%[1]s:1.0.0\n          env: [{name: TZ, value: \"${TIMEZONE}\"}]\n", app))
		}
		if i%perNS == perNS-1 || i == apps-1 {
			var ks strings.Builder
			ks.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
			for j := i - i%perNS; j <= i; j++ {
				fmt.Fprintf(&ks, "  - ./app-%03d/ks.yaml\n", j)
			}
			write(fmt.Sprintf("apps/%s/kustomization.yaml", ns), ks.String())
		}
	}
	write("apps/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"+nsList.String())
}

// benchRepo is the homelab-shaped repository committed three times: base;
// one file changed (app-150's Deployment image); the knob TIMEZONE, which
// every app Kustomization reads, changed in cluster-vars. It returns the
// directory and the three commits.
func benchRepo(tb testing.TB) (dir string, commits [4]string) {
	tb.Helper()
	dir = tb.TempDir()
	genHomelab(tb, dir, benchApps, benchHelm)
	c := commitEach(tb, dir, func(edit func(file, old, new string)) {},
		func(edit func(file, old, new string)) {
			edit("apps/ns-10/app-150/app/deployment.yaml", ":1.0.0", ":1.0.1")
		},
		func(edit func(file, old, new string)) { edit("clusters/bench/vars.yaml", "Etc/UTC", "Europe/Paris") },
		func(edit func(file, old, new string)) {
			// A grouped Renovate bump: manyFiles Deployments' images.
			files, _ := filepath.Glob(filepath.Join(dir, "apps", "*", "*", "app", "deployment.yaml"))
			sort.Strings(files)
			if len(files) < manyFiles {
				tb.Fatalf("%d Deployments, want %d", len(files), manyFiles)
			}
			for _, f := range files[:manyFiles] {
				rel, _ := filepath.Rel(dir, f)
				edit(rel, ":1.0.", ":1.1.")
			}
		})
	copy(commits[:], c)
	return dir, commits
}

// commitEach makes dir a Git repository and commits it after each change
// (the first commit: dir as it is, then changed): the commits in order.
func commitEach(tb testing.TB, dir string, changes ...func(edit func(file, old, new string))) []string {
	tb.Helper()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		tb.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		tb.Fatal(err)
	}
	edit := func(file, old, new string) {
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			tb.Fatalf("%s lacks %q", file, old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	var commits []string
	for i, change := range changes {
		change(edit)
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			tb.Fatal(err)
		}
		h, err := wt.Commit(fmt.Sprintf("commit %d", i), &git.CommitOptions{All: true, Author: &object.Signature{Name: "b", Email: "b@example.com", When: time.Unix(1700000000+int64(i), 0)}})
		if err != nil {
			tb.Fatal(err)
		}
		commits = append(commits, h.String())
	}
	return commits
}

// manyFiles is how many files the many-file commit changes.
const manyFiles = 40

// objectsChanged counts the objects of r's Kustomizations that change.
func objectsChanged(r *Result) (ks, objs int) {
	for _, c := range r.Clusters {
		for _, k := range c.Kustomizations {
			if len(k.Objects) > 0 {
				ks++
			}
			objs += len(k.Objects)
		}
	}
	return ks, objs
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU seconds per op since start (cpu-s/op): on a
// machine whose cores other work shares, the cost a wall time hides.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuTime(b)-start).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkDiff: diff of two commits of the homelab-shaped repository (160
// Kustomizations, 110 HelmReleases), a one-file change and a change of a
// knob every app Kustomization reads, side by side with one check of the
// same repository (issue #47's target: diff ≤ 1.5× check).
// docs/benchmarks.md, docs/diff.md.
func BenchmarkDiff(b *testing.B) {
	dir, commits := benchRepo(b)
	ctx := context.Background()
	b.Run("check", func(b *testing.B) {
		o := check.Options{Options: fluxrepo.Options{Repo: dir, Path: "clusters/bench"}, NoCompare: true}
		defer reportCPU(b, cpuTime(b))
		for b.Loop() {
			r, err := check.Run(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			if len(r.Env.Kustomizations) != benchApps+2 {
				b.Fatalf("%d Kustomizations", len(r.Env.Kustomizations))
			}
		}
	})
	for _, c := range []struct {
		name       string
		base, head string
		ks, objs   int
	}{
		// app-150's Deployment: one object of one Kustomization.
		{"one-file", commits[0], commits[1], 1, 1},
		// TIMEZONE: every app's settings ConfigMap, every HelmRelease's
		// and Deployment's env, and the knob's ConfigMap itself.
		{"knob-every-kustomization-reads", commits[1], commits[2], benchApps + 1, 2*benchApps + 1},
		// A many-file commit (issue 56 item 6): manyFiles Deployments of as
		// many Kustomizations.
		{"many-files", commits[2], commits[3], manyFiles, manyFiles},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := Options{Repo: dir, Path: "clusters/bench", Base: c.base, Head: c.head}
			defer reportCPU(b, cpuTime(b))
			for b.Loop() {
				r, err := Run(ctx, o)
				if err != nil {
					b.Fatal(err)
				}
				if ks, objs := objectsChanged(r); ks != c.ks || objs != c.objs || r.Failed() {
					b.Fatalf("%d Kustomization(s) with %d object(s) changed (failed: %t), want %d with %d", ks, objs, r.Failed(), c.ks, c.objs)
				}
			}
		})
	}
}

// BenchmarkDiffRealShape: diff of two commits of the real-shaped
// repository (internal/benchshape: its first cluster, 140 Kustomizations,
// not strict) beside one check of that cluster (issue 56 item 6: diff ≤
// 1.5× check): one HelmRelease's image bumped, and the knob TIMEZONE every
// app reads changed in cluster-settings.
func BenchmarkDiffRealShape(b *testing.B) {
	dir := b.TempDir()
	if _, err := benchshape.Write(dir); err != nil {
		b.Fatal(err)
	}
	const hr = "kubernetes/apps/actions-runner-system/authelia-000/app/helmrelease.yaml"
	commits := commitEach(b, dir, func(edit func(file, old, new string)) {},
		func(edit func(file, old, new string)) { edit(hr, "tag: 1.0.0@", "tag: 1.0.1@") },
		func(edit func(file, old, new string)) {
			edit("kubernetes/flux/vars/cluster-settings.yaml", "Europe/Berlin", "Europe/Paris")
		})
	ctx := context.Background()
	const path = "kubernetes/flux"
	b.Run("check", func(b *testing.B) {
		o := check.Options{Options: fluxrepo.Options{Repo: dir, Path: path, Namespace: "flux-system", RootName: "cluster"}, NoCompare: true}
		defer reportCPU(b, cpuTime(b))
		for b.Loop() {
			if _, err := check.Run(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name       string
		base, head string
	}{
		{"one-file", commits[0], commits[1]},
		{"knob", commits[1], commits[2]},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := Options{Repo: dir, Path: path, Base: c.base, Head: c.head, AdoptRoot: true}
			defer reportCPU(b, cpuTime(b))
			for b.Loop() {
				r, err := Run(ctx, o)
				if err != nil {
					b.Fatal(err)
				}
				if ks, _ := objectsChanged(r); ks == 0 || r.Failed() {
					b.Fatalf("%d Kustomization(s) changed (failed: %t)", ks, r.Failed())
				}
			}
		})
	}
}
