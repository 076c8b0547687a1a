package diff

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// cilium is the seed's Cilium HelmRelease with valuesFrom (YAML list
// items, indented for spec) before its spec.values.
func cilium(t *testing.T, valuesFrom string) string {
	t.Helper()
	return strings.Replace(readSeed(t, "infra/cilium.yaml"), "  values:\n", "  valuesFrom:\n"+valuesFrom+"  values:\n", 1)
}

func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: kube-system\ndata:\n" + data
}

func secretOf(name, data string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: kube-system\n" + data
}

const cmRef = "    - kind: ConfigMap\n      name: cilium-values\n"

func TestDiffHelmValues(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	upgraded := "~ HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium: Helm upgrade (values from valuesFrom: "
	for _, tc := range []struct {
		name       string
		base, head map[string]string
		want       []string // substrings of the text output
		wantNot    []string // in neither the text nor the JSON output
	}{
		{name: "a ConfigMap it reads changes: upgraded, composed values shown, spec.values on top",
			base: map[string]string{"infra/cilium.yaml": cilium(t, cmRef),
				"infra/values.yaml": configMap("cilium-values", "  values.yaml: |\n    ipam:\n      mode: kubernetes\n    k8sServicePort: 1\n")},
			head: map[string]string{"infra/values.yaml": configMap("cilium-values", "  values.yaml: |\n    ipam:\n      mode: cluster-pool\n    k8sServicePort: 2\n")},
			want: []string{"Kustomization flux-system/infra (prune: true): 1 changed, 1 upgraded",
				upgraded + "ConfigMap kube-system/cilium-values)",
				"* HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium upgraded: Helm upgrade",
				"values as helm-controller composes them (valuesFrom, then spec.values):\n--- base/HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium values\n+++ head/HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium values\n",
				"-  mode: kubernetes\n+  mode: cluster-pool\n", " k8sServicePort: 6443\n kubeProxyReplacement: true\n"}},
		{name: "the ConfigMap is applied by another Kustomization: the reader's Kustomization lists the upgrade",
			base: map[string]string{"infra/cilium.yaml": cilium(t, cmRef),
				"vars/values.yaml": configMap("cilium-values", "  values.yaml: |\n    debug: {enabled: false}\n")},
			head: map[string]string{"vars/values.yaml": configMap("cilium-values", "  values.yaml: |\n    debug: {enabled: true}\n")},
			want: []string{"Kustomization flux-system/infra (prune: true): 1 upgraded", "Kustomization flux-system/vars (prune: true): 1 changed",
				"-  enabled: false\n+  enabled: true\n"}},
		{name: "another key of the ConfigMap changes: no upgrade",
			base:    map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": configMap("cilium-values", "  values.yaml: 'a: 1'\n  other: x\n")},
			head:    map[string]string{"infra/values.yaml": configMap("cilium-values", "  values.yaml: 'a: 1'\n  other: y\n")},
			want:    []string{"1 changed\n"},
			wantNot: []string{"upgraded", "values as helm-controller composes them"}},
		{name: "valuesFrom merged in order, targetPath sets one value",
			base: map[string]string{"infra/cilium.yaml": cilium(t, "    - kind: ConfigMap\n      name: first\n    - kind: ConfigMap\n      name: second\n    - kind: ConfigMap\n      name: second\n      valuesKey: host\n      targetPath: hubble.relay.host\n"),
				"infra/values.yaml": configMap("first", "  values.yaml: |\n    a: from-first\n    b: from-first\n") + "---\n" + configMap("second", "  values.yaml: |\n    b: from-second\n  host: relay-a\n")},
			head: map[string]string{"infra/values.yaml": configMap("first", "  values.yaml: |\n    a: from-first\n    b: from-first\n") + "---\n" + configMap("second", "  values.yaml: |\n    b: from-second\n  host: relay-b\n")},
			want: []string{"-    host: relay-a\n+    host: relay-b\n"}},
		{name: "the HelmRelease's own spec.values change: its composed values under its Helm upgrade line",
			base: map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": configMap("cilium-values", "  values.yaml: 'ipam: {mode: kubernetes}'\n")},
			head: map[string]string{"infra/cilium.yaml": strings.Replace(cilium(t, cmRef), "k8sServicePort: 6443", "k8sServicePort: 7443", 1)},
			want: []string{"~ HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium: Helm upgrade (values)",
				"values as helm-controller composes them", " ipam:\n   mode: kubernetes\n", "-k8sServicePort: 6443\n+k8sServicePort: 7443\n"}},
		{name: "substitution applies before composition",
			base: map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": configMap("cilium-values", "  values.yaml: |\n    cluster:\n      id: ${CLUSTER_NAME}-1\n")},
			head: map[string]string{"vars/cluster-vars.yaml": strings.Replace(readSeed(t, "vars/cluster-vars.yaml"), "CLUSTER_NAME: dev", "CLUSTER_NAME: prod", 1)},
			want: []string{"-  id: dev-1\n-  name: dev\n+  id: prod-1\n+  name: prod\n"}},
		{name: "Secret values never shown: hashes, keys kept",
			base: map[string]string{"infra/cilium.yaml": cilium(t, "    - kind: Secret\n      name: cilium-secret\n    - kind: Secret\n      name: cilium-secret\n      valuesKey: token\n      targetPath: clustermesh.token\n"),
				"infra/secret.yaml": secretOf("cilium-secret", "data:\n  values.yaml: "+b64("password: hunter2-base\nlist: [sekrit-a]\n")+"\nstringData:\n  token: tok-base-sekrit\n")},
			head: map[string]string{"infra/secret.yaml": secretOf("cilium-secret", "data:\n  values.yaml: "+b64("password: hunter2-head\nlist: [sekrit-b]\n")+"\nstringData:\n  token: tok-head-sekrit\n")},
			want: []string{upgraded + "Secret kube-system/cilium-secret, Secret kube-system/cilium-secret)",
				"-password: '<redacted: hmac-sha256 ", "+password: '<redacted: hmac-sha256 ", "-  token: '<redacted: hmac-sha256 ", "-list: '<redacted: hmac-sha256 "},
			wantNot: []string{"hunter2", "sekrit", b64("password: hunter2-base\nlist: [sekrit-a]\n"), b64("tok-base-sekrit")}},
		{name: "a Secret's value overridden by spec.values is the plain value",
			base:    map[string]string{"infra/cilium.yaml": cilium(t, "    - kind: Secret\n      name: s\n"), "infra/secret.yaml": secretOf("s", "stringData:\n  values.yaml: 'k8sServicePort: 1111'\n")},
			head:    map[string]string{"infra/cilium.yaml": strings.Replace(cilium(t, "    - kind: Secret\n      name: s\n"), "k8sServicePort: 6443", "k8sServicePort: 7443", 1)},
			want:    []string{"+k8sServicePort: 7443\n"},
			wantNot: []string{"1111"}},
		{name: "a ConfigMap the repository does not render: said, not an error",
			base:    map[string]string{"infra/cilium.yaml": cilium(t, "    - kind: ConfigMap\n      name: made-by-hand\n")},
			head:    map[string]string{"infra/cilium.yaml": strings.Replace(cilium(t, "    - kind: ConfigMap\n      name: made-by-hand\n"), "k8sServicePort: 6443", "k8sServicePort: 7443", 1)},
			want:    []string{"note: values from ConfigMap kube-system/made-by-hand not in the repository: merged values unknown for that part", "+k8sServicePort: 7443\n"},
			wantNot: []string{"FAIL"}},
		{name: "a Secret an ExternalSecret makes: said as such",
			base: map[string]string{"infra/cilium.yaml": cilium(t, "    - kind: Secret\n      name: from-vault\n"),
				"infra/es.yaml": "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: from-vault\n  namespace: kube-system\nspec:\n  secretStoreRef: {kind: ClusterSecretStore, name: vault}\n  target: {name: from-vault}\n  data:\n    - secretKey: values.yaml\n      remoteRef: {key: cilium}\n"},
			head:    map[string]string{"infra/cilium.yaml": strings.Replace(cilium(t, "    - kind: Secret\n      name: from-vault\n"), "k8sServicePort: 6443", "k8sServicePort: 7443", 1)},
			want:    []string{"note: values from Secret kube-system/from-vault made at runtime by ExternalSecret kube-system/from-vault: merged values unknown for that part"},
			wantNot: []string{"FAIL"}},
		{name: "a SOPS-encrypted Secret: unknown, never shown",
			base: map[string]string{"infra/cilium.yaml": cilium(t, "    - kind: Secret\n      name: sopsy\n"),
				"infra/secret.yaml": secretOf("sopsy", "data:\n  values.yaml: ENC[AES256_GCM,data:c2VjcmV0LWJhc2U=,iv:abc,tag:def,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:bWFj,iv:abc,tag:def,type:str]\n")},
			head:    map[string]string{"infra/cilium.yaml": strings.Replace(cilium(t, "    - kind: Secret\n      name: sopsy\n"), "k8sServicePort: 6443", "k8sServicePort: 7443", 1)},
			want:    []string{"values from Secret kube-system/sopsy are SOPS-encrypted"},
			wantNot: []string{"c2VjcmV0", "ENC["}},
		{name: "a key the reference needs is gone at head: helm-controller's failure",
			base: map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": configMap("cilium-values", "  values.yaml: 'a: 1'\n")},
			head: map[string]string{"infra/values.yaml": configMap("cilium-values", "  renamed.yaml: 'a: 1'\n")},
			want: []string{upgraded + "ConfigMap kube-system/cilium-values); FAIL helm-controller does not upgrade (ValuesError): could not resolve ConfigMap chart values reference 'kube-system/cilium-values' with key 'values.yaml': key not found",
				"    FAIL could not resolve ConfigMap chart values reference"}},
		{name: "the ConfigMap is removed at head: resource not found",
			base: map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": configMap("cilium-values", "  values.yaml: 'a: 1'\n")},
			head: map[string]string{"infra/values.yaml": ""},
			want: []string{"FAIL helm-controller does not upgrade (ValuesError): could not resolve ConfigMap chart values reference 'kube-system/cilium-values' with key 'values.yaml': configmaps \"cilium-values\" not found",
				"note: ConfigMap kube-system/cilium-values is removed at head and pruned: helm-controller does not find it"}},
		{name: "the ConfigMap is removed at head, prune: disabled: its values stay",
			base:    map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": strings.Replace(configMap("cilium-values", "  values.yaml: 'a: 1'\n"), "  namespace: kube-system\n", "  namespace: kube-system\n  annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}\n", 1)},
			head:    map[string]string{"infra/values.yaml": "", "infra/cilium.yaml": strings.Replace(cilium(t, cmRef), "k8sServicePort: 6443", "k8sServicePort: 7443", 1)},
			want:    []string{"note: ConfigMap kube-system/cilium-values is removed at head but left on the cluster (not pruned): its values as at base"},
			wantNot: []string{"FAIL", "-a: 1"}},
		{name: "an optional reference's key is gone: left out, no failure",
			base:    map[string]string{"infra/cilium.yaml": cilium(t, cmRef+"      optional: true\n"), "infra/values.yaml": configMap("cilium-values", "  values.yaml: 'a: 1'\n")},
			head:    map[string]string{"infra/values.yaml": configMap("cilium-values", "  renamed.yaml: 'a: 1'\n")},
			want:    []string{"-a: 1\n"},
			wantNot: []string{"FAIL"}},
		{name: "a HelmRelease added with valuesFrom: its composed values",
			base: map[string]string{"infra/cilium.yaml": ""},
			head: map[string]string{"infra/cilium.yaml": cilium(t, cmRef), "infra/values.yaml": configMap("cilium-values", "  values.yaml: 'ipam: {mode: kubernetes}'\n")},
			want: []string{"+ HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium: Helm install (chart cilium 1.16.5)", "+ipam:\n+  mode: kubernetes\n"}},
		{name: "a shared OCIRepository's tag: every HelmRelease reading it, in any Kustomization",
			base: map[string]string{"infra/podinfo.yaml": ociCharts,
				"clusters/dev/apps.yaml": appsKustomization,
				"apps/podinfo.yaml":      strings.ReplaceAll(strings.SplitN(ociCharts, "---\n", 3)[2], "podinfo-b", "podinfo-apps")},
			head: map[string]string{"infra/podinfo.yaml": strings.Replace(ociCharts, "tag: 6.5.0", "tag: 6.6.0", 1)},
			want: []string{"~ OCIRepository.source.toolkit.fluxcd.io default/podinfo: updated (tag 6.5.0 → 6.6.0); " +
				"HelmRelease default/podinfo-a takes its chart from it (chartRef) → Helm upgrade when the artifact changes; " +
				"HelmRelease default/podinfo-apps takes its chart from it (chartRef) → Helm upgrade when the artifact changes; " +
				"HelmRelease default/podinfo-b takes its chart from it (chartRef) → Helm upgrade when the artifact changes; " +
				"HelmRelease default/podinfo-c takes its chart from it (chartRef) → Helm upgrade when the artifact changes\n"}},
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
					t.Errorf("do not want %q in the text or JSON output:\n%s\n%s", w, out.String(), js.String())
				}
			}
			if testing.Verbose() {
				t.Log(out.String())
			}
		})
	}
}

// TestComposeOrder: valuesFrom merged in order (a later reference wins,
// maps merged), spec.values on top, a targetPath value over everything
// (chartutil.ChartValuesFromReferences merges spec.values in first then),
// Secret leaves hashed with their maps kept.
func TestComposeOrder(t *testing.T) {
	red := newRedactor()
	obj := func(s string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	vs := &valuesSource{objs: map[ObjectKey]*unstructured.Unstructured{
		{Kind: "ConfigMap", Namespace: "ns", Name: "first"}:  obj(configMap("first", "  values.yaml: |\n    a: first\n    m: {p: first, q: first}\n")),
		{Kind: "ConfigMap", Namespace: "ns", Name: "second"}: obj(configMap("second", "  values.yaml: |\n    a: second\n    m: {q: second}\n  port: '8080'\n")),
		{Kind: "Secret", Namespace: "ns", Name: "s"}:         obj(secretOf("s", "stringData:\n  values.yaml: |\n    auth: {password: sekrit, users: [sekrit]}\n")),
	}}
	for _, u := range vs.objs {
		u.SetNamespace("ns")
	}
	hr := toHelmRelease(obj(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: ns}
spec:
  chartRef: {kind: OCIRepository, name: app}
  valuesFrom:
    - {kind: ConfigMap, name: first}
    - {kind: ConfigMap, name: second}
    - {kind: Secret, name: s}
    - {kind: ConfigMap, name: second, valuesKey: port, targetPath: service.port}
  values:
    a: spec
    service: {port: 80, type: ClusterIP}
`))
	c := vs.compose(context.Background(), hr, red)
	if c.fail != "" || len(c.notes) != 0 {
		t.Fatalf("fail %q, notes %q", c.fail, c.notes)
	}
	got, _ := yaml.Marshal(c.values)
	want := "a: spec\nauth:\n  password: '" + red.mark(`"sekrit"`) + "'\n  users: '" + red.mark(`["sekrit"]`) + "'\nm:\n  p: first\n  q: second\nservice:\n  port: 8080\n  type: ClusterIP\n"
	if string(got) != want {
		t.Errorf("composed values:\n%s\nwant:\n%s", got, want)
	}
	// A reference of another kind: the controller's own refusal.
	hr.Spec.ValuesFrom[0].Kind = "Deployment"
	if c := vs.compose(context.Background(), hr, red); !strings.Contains(c.fail, "unsupported values reference kind") {
		t.Errorf("fail = %q, want the unsupported kind", c.fail)
	}
}
