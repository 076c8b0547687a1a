package fluxrepo

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Data keeps the labels the object carries in the cluster, for check to
// match with kustomize-controller's --watch-configs-label-selector: a
// ConfigMap's own, and for a made Secret those its maker puts on it
// (external-secrets: spec.target.template.metadata.labels; sealed-secrets:
// spec.template.metadata.labels).
func TestDataLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, y string
		want    map[string]string
	}{
		{"ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\n  labels: {owner: helm}\ndata: {a: b}\n", map[string]string{"owner": "helm"}},
		{"ConfigMap without labels", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata: {a: b}\n", nil},
		{"ExternalSecret", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: app\n  labels: {on: the-maker}\nspec:\n  target:\n    template:\n      metadata:\n        labels: {reconcile.fluxcd.io/watch: Enabled}\n  data:\n    - secretKey: TOKEN\n", map[string]string{"reconcile.fluxcd.io/watch": "Enabled"}},
		{"SealedSecret", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: app\nspec:\n  encryptedData: {TOKEN: AgB}\n  template:\n    metadata:\n      labels: {owner: helm}\n", map[string]string{"owner": "helm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := appliedResource(t, tc.y)
			d := madeSecret(r, "default")
			if d == nil {
				d = dataOf(r, "default")
			}
			if !maps.Equal(d.Labels, tc.want) {
				t.Fatalf("labels %v, want %v", d.Labels, tc.want)
			}
		})
	}
}

// TestMadeByOtherControllers: a ClusterExternalSecret makes its Secret in
// every namespace it lists and every rendered Namespace its selectors
// match (none other), and tofu-controller's Terraform makes
// spec.writeOutputsToSecret with the outputs' names (renamed by
// "output:key"; every output when none is listed: open). Each counts as
// rendered by the Kustomization applying its maker (issue 55 item 6).
func TestMadeByOtherControllers(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	files := map[string]string{
		"clusters/prod/sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 1m, url: https://git.example.invalid/r.git, ref: {branch: main}}\n---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 10m, path: ./clusters/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: secrets, namespace: flux-system}\nspec: {interval: 10m, path: ./secrets, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n",
		"secrets/namespaces.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: media, labels: {shared-secrets: enabled}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: private}\n",
		"secrets/ces.yaml":        "apiVersion: external-secrets.io/v1\nkind: ClusterExternalSecret\nmetadata: {name: registry}\nspec:\n  externalSecretName: registry-creds\n  namespaces: [default]\n  namespaceSelectors:\n    - matchLabels: {shared-secrets: enabled}\n  externalSecretSpec:\n    secretStoreRef: {kind: ClusterSecretStore, name: vault}\n    target: {name: registry}\n    data:\n      - secretKey: TOKEN\n        remoteRef: {key: registry}\n",
		"secrets/tf.yaml": "apiVersion: infra.contrib.fluxcd.io/v1alpha2\nkind: Terraform\nmetadata: {name: dns, namespace: flux-system}\nspec:\n  path: ./dns\n  sourceRef: {kind: GitRepository, name: flux-system}\n  writeOutputsToSecret:\n    name: dns-outputs\n    outputs: [zone_id, \"endpoint:DNS_ENDPOINT\"]\n---\n" +
			"apiVersion: infra.contrib.fluxcd.io/v1alpha2\nkind: Terraform\nmetadata: {name: net, namespace: flux-system}\nspec:\n  path: ./net\n  sourceRef: {kind: GitRepository, name: flux-system}\n  writeOutputsToSecret: {name: net-outputs}\n",
	}
	for f, c := range files {
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, repo, f, c)
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, madeBy string
		keys        []string
		open        bool
	}{
		{"Secret/default/registry", "ClusterExternalSecret registry", []string{"TOKEN"}, false},
		{"Secret/media/registry", "ClusterExternalSecret registry", []string{"TOKEN"}, false},
		{"Secret/flux-system/dns-outputs", "Terraform flux-system/dns", []string{"DNS_ENDPOINT", "zone_id"}, false},
		{"Secret/flux-system/net-outputs", "Terraform flux-system/net", nil, true},
	} {
		d := e.Data[tc.key]
		if d == nil {
			t.Errorf("%s not rendered; data: %v", tc.key, slices.Sorted(maps.Keys(e.Data)))
			continue
		}
		if d.MadeBy != tc.madeBy || d.AppliedBy != "flux-system/secrets" || d.Open != tc.open || !slices.Equal(slices.Sorted(maps.Keys(d.Values)), tc.keys) {
			t.Errorf("%s: made by %q, applied by %q, open %t, keys %v; want %q, flux-system/secrets, %t, %v", tc.key, d.MadeBy, d.AppliedBy, d.Open, slices.Sorted(maps.Keys(d.Values)), tc.madeBy, tc.open, tc.keys)
		}
	}
	if d := e.Data["Secret/private/registry"]; d != nil {
		t.Errorf("Secret/private/registry made in a namespace no selector selects: %+v", d)
	}
}
