package diff

import (
	"bytes"
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// twoCommits is the seed's base tree plus base (path → content), committed,
// then head applied ("" deletes the file) and committed.
func twoCommits(t *testing.T, base, head map[string]string) string {
	t.Helper()
	write := func(dir string, files map[string]string) {
		for p, c := range files {
			full := filepath.Join(dir, p)
			if c == "" {
				if err := os.Remove(full); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	empty := t.TempDir()
	return gitRepo(t, []string{filepath.Join("testdata", "seed", "base"), empty}, func(dir string, i int) {
		if i == 0 {
			write(dir, base)
		} else {
			write(dir, head)
		}
	})
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app:1.0.0
`

const secret = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: default
stringData:
  password: hunter2-base
`

const sopsSecret = `apiVersion: v1
kind: Secret
metadata:
  name: sopsy
  namespace: default
data:
  token: ENC[AES256_GCM,data:c2VjcmV0LWJhc2U=,iv:abc,tag:def,type:str]
sops:
  mac: ENC[AES256_GCM,data:bWFjLWJhc2U=,iv:abc,tag:def,type:str]
  age:
    - recipient: age1example
      enc: AGE-ENCRYPTED-BASE
`

const namespace = `apiVersion: v1
kind: Namespace
metadata:
  name: tenant
`

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object}
`

const appsKustomization = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`

const valuesCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cilium-values
  namespace: kube-system
data:
  values.yaml: |
    ipam:
      mode: kubernetes
  other: unread
`

const ociCharts = `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: podinfo
  namespace: default
spec:
  interval: 1h
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref:
    tag: 6.5.0
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-a
  namespace: default
spec:
  interval: 30m
  chartRef:
    kind: OCIRepository
    name: podinfo
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-b
  namespace: default
spec:
  interval: 30m
  chartRef:
    kind: OCIRepository
    name: podinfo
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-c
  namespace: default
spec:
  interval: 30m
  chartRef:
    kind: OCIRepository
    name: podinfo
`

func TestDiffEngine(t *testing.T) {
	withValuesFrom := strings.Replace(readSeed(t, "infra/cilium.yaml"), "  values:\n", "  valuesFrom:\n    - kind: ConfigMap\n      name: cilium-values\n  values:\n", 1)
	for _, tc := range []struct {
		name       string
		base, head map[string]string
		want       []string // lines (substrings) of the text output
		wantNot    []string
		fail       bool
	}{
		{name: "pod template change: rollout",
			base: map[string]string{"infra/app.yaml": deployment},
			head: map[string]string{"infra/app.yaml": strings.Replace(deployment, "app:1.0.0", "app:1.1.0", 1)},
			want: []string{"Kustomization flux-system/infra (prune: true): 1 changed", "~ Deployment.apps default/app: rollout: the pod template changes",
				"-      - image: ghcr.io/example/app:1.0.0", "+      - image: ghcr.io/example/app:1.1.0"}},
		{name: "replicas only: no rollout",
			base: map[string]string{"infra/app.yaml": deployment},
			head: map[string]string{"infra/app.yaml": strings.Replace(deployment, "replicas: 1", "replicas: 2", 1)},
			want: []string{"~ Deployment.apps default/app: updated: the pod template is unchanged, no rollout"}},
		{name: "removed from a pruning Kustomization: pruned",
			base: map[string]string{"infra/app.yaml": deployment},
			head: map[string]string{"infra/app.yaml": ""},
			want: []string{"1 removed", "- Deployment.apps default/app: pruned: deleted from the cluster"}},
		{name: "removed, prune: disabled: left",
			base: map[string]string{"infra/app.yaml": strings.Replace(deployment, "  namespace: default\n", "  namespace: default\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)},
			head: map[string]string{"infra/app.yaml": ""},
			want: []string{"- Deployment.apps default/app: left on the cluster: kustomize.toolkit.fluxcd.io/prune: disabled"}},
		{name: "removed, prune: false: left",
			base: map[string]string{"infra/app.yaml": deployment, "clusters/dev/infra.yaml": strings.Replace(readSeed(t, "clusters/dev/infra.yaml"), "prune: true", "prune: false", 1)},
			head: map[string]string{"infra/app.yaml": ""},
			want: []string{"Kustomization flux-system/infra (prune: false)", "- Deployment.apps default/app: left on the cluster: the Kustomization does not prune (spec.prune: false)"}},
		{name: "Namespace removed from a pruning Kustomization",
			base: map[string]string{"infra/ns.yaml": namespace},
			head: map[string]string{"infra/ns.yaml": ""},
			want: []string{"- Namespace tenant: pruned: deleting the Namespace deletes everything in it"}},
		{name: "chart version bump: Helm upgrade",
			head: map[string]string{"infra/cilium.yaml": strings.Replace(readSeed(t, "infra/cilium.yaml"), "version: 1.16.5", "version: 1.17.0", 1)},
			want: []string{"~ HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium: Helm upgrade (chart 1.16.5 → 1.17.0)"}},
		{name: "HelmRelease added: install; removed: uninstall",
			base: map[string]string{"infra/cilium.yaml": ""},
			head: map[string]string{"infra/cilium.yaml": readSeed(t, "infra/cilium.yaml")},
			want: []string{"+ HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium: Helm install (chart cilium 1.16.5)"}},
		{name: "CRD changed",
			base: map[string]string{"infra/crd.yaml": crd},
			head: map[string]string{"infra/crd.yaml": strings.Replace(crd, "served: true", "served: true\n      subresources: {status: {}}", 1)},
			want: []string{"~ CustomResourceDefinition.apiextensions.k8s.io widgets.example.com: CRD changed: every Widget object"}},
		{name: "CRD removed: its objects go",
			base: map[string]string{"infra/crd.yaml": crd},
			head: map[string]string{"infra/crd.yaml": ""},
			want: []string{"- CustomResourceDefinition.apiextensions.k8s.io widgets.example.com: pruned: deleting the CRD deletes every Widget object on the cluster"}},
		{name: "Secret values never shown",
			base: map[string]string{"infra/secret.yaml": secret, "infra/sops.yaml": sopsSecret},
			head: map[string]string{"infra/secret.yaml": strings.Replace(secret, "hunter2-base", "hunter2-head", 1),
				"infra/sops.yaml": strings.NewReplacer("c2VjcmV0LWJhc2U=", "c2VjcmV0LWhlYWQ=", "bWFjLWJhc2U=", "bWFjLWhlYWQ=", "AGE-ENCRYPTED-BASE", "AGE-ENCRYPTED-HEAD").Replace(sopsSecret)},
			want:    []string{"~ Secret default/creds: updated", "~ Secret default/sopsy: updated", "<redacted: hmac-sha256 "},
			wantNot: []string{"hunter2", "c2VjcmV0", "bWFj", "AGE-ENCRYPTED", "ENC["}},
		{name: "Kustomization added wholesale",
			head: map[string]string{"clusters/dev/apps.yaml": appsKustomization, "apps/ns.yaml": namespace},
			want: []string{"Kustomization flux-system/apps (prune: true): added wholesale: 1 added", "+ Namespace tenant: created",
				"+ Kustomization.kustomize.toolkit.fluxcd.io flux-system/apps: created"}},
		{name: "Kustomization removed wholesale: its objects pruned",
			base: map[string]string{"clusters/dev/apps.yaml": appsKustomization, "apps/ns.yaml": namespace},
			head: map[string]string{"clusters/dev/apps.yaml": "", "apps/ns.yaml": ""},
			want: []string{"Kustomization flux-system/apps (prune: true): removed wholesale: 1 removed", "- Namespace tenant: pruned: deleting the Namespace deletes everything in it",
				"- Kustomization.kustomize.toolkit.fluxcd.io flux-system/apps: pruned: deleting it garbage-collects everything it applied"}},
		{name: "fails to build at head: FAIL as check says it",
			head: map[string]string{"infra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cilium.yaml\n  - missing.yaml\n"},
			want: []string{"FAIL Kustomization flux-system/infra (changed): clusters/dev/infra.yaml:", "missing.yaml", "fix:"},
			fail: true},
		{name: "valuesFrom ConfigMap changes: Helm upgrade of its reader",
			base: map[string]string{"infra/values.yaml": valuesCM, "infra/cilium.yaml": withValuesFrom},
			head: map[string]string{"infra/values.yaml": strings.Replace(valuesCM, "mode: kubernetes", "mode: cluster-pool", 1)},
			want: []string{"~ ConfigMap kube-system/cilium-values: updated; HelmRelease kube-system/cilium reads its values.yaml with valuesFrom → Helm upgrade"}},
		{name: "valuesFrom ConfigMap, another key changes: no upgrade",
			base:    map[string]string{"infra/values.yaml": valuesCM, "infra/cilium.yaml": withValuesFrom},
			head:    map[string]string{"infra/values.yaml": strings.Replace(valuesCM, "other: unread", "other: changed", 1)},
			want:    []string{"~ ConfigMap kube-system/cilium-values: updated\n"},
			wantNot: []string{"reads its values.yaml"}},
		{name: "shared OCIRepository tag: every HelmRelease reading it",
			base: map[string]string{"infra/podinfo.yaml": ociCharts},
			head: map[string]string{"infra/podinfo.yaml": strings.Replace(ociCharts, "tag: 6.5.0", "tag: 6.6.0", 1)},
			want: []string{"~ OCIRepository.source.toolkit.fluxcd.io default/podinfo: updated (tag 6.5.0 → 6.6.0); HelmRelease default/podinfo-a takes its chart from it (chartRef) → Helm upgrade when the artifact changes; HelmRelease default/podinfo-b takes its chart from it (chartRef) → Helm upgrade when the artifact changes; HelmRelease default/podinfo-c takes its chart from it (chartRef) → Helm upgrade when the artifact changes\n"}},
		{name: "the root directory fails at head",
			head: map[string]string{"clusters/dev/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - sync.yaml\n  - vars.yaml\n  - infra.yaml\n  - gone.yaml\n"},
			want: []string{"FAIL the root directory clusters/dev does not build at head:", "gone.yaml"},
			fail: true},
		{name: "no change",
			head: map[string]string{"README.md": "# a file no build reads\n"},
			want: []string{"cluster clusters/dev: unchanged"}, wantNot: []string{"Kustomization flux-system"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := twoCommits(t, tc.base, tc.head)
			res, err := Run(context.Background(), Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", FluxVersion: "v2.9.5"})
			if err != nil {
				t.Fatal(err)
			}
			var out, js bytes.Buffer
			if err := WriteText(&out, res); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out.String(), w) || strings.Contains(js.String(), w) {
					t.Errorf("do not want %q in the text or JSON output:\n%s", w, out.String())
				}
			}
			if testing.Verbose() {
				t.Log(out.String())
			}
			if res.Failed() != tc.fail {
				t.Errorf("Failed() = %t, want %t", res.Failed(), tc.fail)
			}
		})
	}
}

func readSeed(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seed", "base", p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDiffTaskfileLayout (issue 54): diff finds the Taskfile layout's root
// as check does — flux-system/cluster, a self-applying root of another
// name, adopted without --root — and judges it by the release the
// bootstrap's Flux install pins (v2.4.0: not strict), not the default.
func TestDiffTaskfileLayout(t *testing.T) {
	t.Parallel()
	layout := filepath.Join("..", "..", "testdata", "layouts", "taskfile")
	repo := gitRepo(t, []string{layout, layout}, func(dir string, i int) {
		if i == 1 {
			replaceIn(t, dir, "kubernetes/apps/default/echo/app/configmap.yaml", "  TZ: ${TIMEZONE}\n", "  TIMEZONE: ${TIMEZONE}\n")
		}
	})
	for _, tc := range []struct {
		adopt bool
		want  string
	}{
		{true, "not strict: kustomize-controller v1.4.0 (Flux v2.4.0)"},
		{false, "renders no such Kustomization"},
	} {
		b := layoutDiff(t, repo, tc.adopt)
		if !strings.Contains(b, tc.want) || (tc.adopt && !strings.Contains(b, "~ ConfigMap default/echo: updated")) {
			t.Errorf("AdoptRoot %t: want %q (and the echo change when adopted) in:\n%s", tc.adopt, tc.want, b)
		}
	}
}

// TestDiffMalformedLabels (issue 56 item 1): an object whose label is no
// string is compared as kustomize-controller applies it — with none of
// its labels (fluxrepo.AsApplied; e2e TestMalformedMetadata) — and the
// run goes on; a string label is a change (the negative).
func TestDiffMalformedLabels(t *testing.T) {
	t.Parallel()
	layout := filepath.Join("..", "..", "testdata", "layouts", "taskfile")
	for _, tc := range []struct {
		labels string
		want   string
	}{
		{"    team: web\n    enabled: true\n", "cluster kubernetes/flux: unchanged"},
		{"    team: web\n", "~ ConfigMap default/echo: updated"},
	} {
		repo := gitRepo(t, []string{layout, layout}, func(dir string, i int) {
			if i == 1 {
				replaceIn(t, dir, "kubernetes/apps/default/echo/app/configmap.yaml", "  name: echo\n", "  name: echo\n  labels:\n"+tc.labels)
			}
		})
		b := layoutDiff(t, repo, true)
		if !strings.Contains(b, tc.want) {
			t.Errorf("labels %q: want %q in:\n%s", tc.labels, tc.want, b)
		}
	}
}

// TestDiffMove (issue 56 item 4): an object that leaves one
// Kustomization's path for another's is one MOVE step naming both orders
// and the fix, not two unrelated lines; with prune: disabled on it (the
// negative) the first one does not delete it, and there is no hazard.
func TestDiffMove(t *testing.T) {
	t.Parallel()
	layout := filepath.Join("..", "..", "testdata", "layouts", "taskfile")
	const claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\n%sspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n"
	for _, tc := range []struct {
		meta string
		want []string
		not  []string
	}{
		{"", []string{"MOVE PersistentVolumeClaim default/data moves from Kustomization flux-system/echo to flux-system/cluster-apps: if flux-system/echo reconciles first, its garbage collection deletes it, with the data of its volume, and flux-system/cluster-apps creates it anew; if flux-system/cluster-apps reconciles first, it takes the object over",
			"kustomize.toolkit.fluxcd.io/prune: disabled for the move", "- PersistentVolumeClaim default/data: moves to Kustomization flux-system/cluster-apps (MOVE below): pruned"}, nil},
		{"  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", nil, []string{"MOVE"}},
	} {
		repo := gitRepo(t, []string{layout, layout}, func(dir string, i int) {
			pvc := fmt.Sprintf(claim, tc.meta)
			if i == 0 {
				write(t, dir, "kubernetes/apps/default/echo/app/pvc.yaml", pvc)
				replaceIn(t, dir, "kubernetes/apps/default/echo/app/kustomization.yaml", "  - ./configmap.yaml\n", "  - ./configmap.yaml\n  - ./pvc.yaml\n")
				return
			}
			write(t, dir, "kubernetes/apps/default/pvc.yaml", pvc)
			replaceIn(t, dir, "kubernetes/apps/default/kustomization.yaml", "resources:\n", "resources:\n  - ./pvc.yaml\n")
		})
		b := layoutDiff(t, repo, true)
		for _, w := range tc.want {
			if !strings.Contains(b, w) {
				t.Errorf("want %q in:\n%s", w, b)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b, w) {
				t.Errorf("%q in:\n%s", w, b)
			}
		}
	}
}

// write writes one file of the work tree.
func write(t *testing.T, dir, file, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiffOCIRepositoryBump (issue 56 item 5): an OCIRepository chart bump
// names its old and new ref on its line, as a HelmRepository chart's
// version does; a change elsewhere (the negative) does not.
func TestDiffOCIRepositoryBump(t *testing.T) {
	t.Parallel()
	oci := func(ref map[string]any, interval string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
			"metadata": map[string]any{"name": "podinfo", "namespace": "flux-system"}, "spec": map[string]any{"interval": interval, "ref": ref}}}
	}
	for _, tc := range []struct {
		b, h *unstructured.Unstructured
		want string
	}{
		{oci(map[string]any{"tag": "6.5.0"}, "1h"), oci(map[string]any{"tag": "6.6.0"}, "1h"), "updated (tag 6.5.0 → 6.6.0)"},
		{oci(map[string]any{"tag": "6.5.0"}, "1h"), oci(map[string]any{"semver": ">=6.0.0"}, "1h"), "updated (tag 6.5.0 removed, semver >=6.0.0)"},
		{oci(map[string]any{"tag": "6.5.0"}, "1h"), oci(map[string]any{"tag": "6.5.0"}, "5m"), "updated"},
	} {
		if got := changeAction(tc.b, tc.h); got != tc.want {
			t.Errorf("changeAction: %q, want %q", got, tc.want)
		}
	}
}

// TestDiffRevisionNotes (issue 56 item 5): a note both revisions give
// (a symbolic link in both trees) is said once.
func TestDiffRevisionNotes(t *testing.T) {
	t.Parallel()
	got := revisionNotes([]string{"docs/link: a symbolic link, left out", "old: a submodule, left out"}, []string{"docs/link: a symbolic link, left out", "new.bin: 9 bytes, over the 1-byte bound: left out"})
	want := []string{"both revisions: docs/link: a symbolic link, left out", "base: old: a submodule, left out", "head: new.bin: 9 bytes, over the 1-byte bound: left out"}
	if !slices.Equal(got, want) {
		t.Errorf("revisionNotes: %q, want %q", got, want)
	}
}

// layoutDiff is diff's text output of HEAD~1 → HEAD of repo, the root
// flux-system/flux-system adopted when adopt (as the CLI without --root).
func layoutDiff(t *testing.T, repo string, adopt bool) string {
	t.Helper()
	res, err := Run(context.Background(), Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", Namespace: "flux-system", RootName: "flux-system", AdoptRoot: adopt})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
