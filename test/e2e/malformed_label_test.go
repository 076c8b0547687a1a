//go:build e2e

package e2e

// What kustomize-controller does with metadata that is not strings, which
// check's [schema] warning and fluxrepo.AsApplied follow (issue 56 item
// 1): a label whose value is a YAML boolean does not fail the apply — the
// object is applied with none of its own labels (fluxcd/pkg/ssa
// SetOwnerLabels reads them with GetLabels, which returns none when one
// value is not a string, and sets only the owner labels) — and an
// annotation's boolean is stored as its text.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMalformedMetadata(t *testing.T) {
	ctx := timeoutCtx(t, 12*time.Minute)
	ensureFlux(t)
	repo, key, _, _ := taskfileRepo(ctx, t, nil)
	if up := bootstrapJSONIn(t, key, taskfileUp(repo)...); up.code != 0 {
		t.Fatalf("up: %s", up)
	}
	ks, err := os.ReadFile(filepath.Join(suite.root, "testdata", "layouts", "taskfile", "kubernetes", "apps", "default", "echo", "ks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name, meta string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + taskfileNS + "\n" + meta + "data:\n  a: b\n"
	}
	edits := map[string]string{
		"kubernetes/apps/default/other.yaml": cm("bool-label", "  labels:\n    team: web\n    enabled: true\n") +
			cm("bool-annotation", "  annotations:\n    note: web\n    enabled: true\n") + cm("string-label", "  labels:\n    team: web\n"),
		"kubernetes/apps/default/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./namespace.yaml\n  - ./other.yaml\n  - ./echo/ks.yaml\n",
		"kubernetes/apps/default/echo/ks.yaml": strings.Replace(strings.Replace(string(ks), "  name: echo\n", "  name: echo\n  labels:\n    team: web\n    enabled: true\n", 1),
			"targetNamespace: default", "targetNamespace: "+taskfileNS, 1),
	}
	sha, err := lastTaskfileRepo.Commit(ctx, "", edits, "labels that are not strings")
	if err != nil {
		t.Fatal(err)
	}
	rev := lastTaskfileRepo.Revision(sha)
	gr := &sourcev1.GitRepository{}
	gr.Namespace, gr.Name = fluxNS, "home-kubernetes"
	requestReconcile(ctx, t, gr)
	for _, n := range []string{"cluster", "cluster-apps"} {
		k := &kustomizev1.Kustomization{}
		k.Namespace, k.Name = fluxNS, n
		requestReconcile(ctx, t, k)
	}
	// cluster-apps applies all of it: Ready at the new revision.
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "cluster-apps", func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, current := readyStatus(k.Generation, k.Status.Conditions)
		return st == "True" && current && k.Status.LastAppliedRevision == rev, string(st) + " " + reason + ": " + msg + " at " + k.Status.LastAppliedRevision
	})
	owner := map[string]string{"kustomize.toolkit.fluxcd.io/name": "cluster-apps", "kustomize.toolkit.fluxcd.io/namespace": fluxNS}
	var echo kustomizev1.Kustomization
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "echo"}, &echo); err != nil || len(echo.Labels) != 2 || echo.Labels["team"] != "" {
		t.Errorf("Kustomization echo: %v, labels %v: want only the owner labels %v (its own dropped)", err, echo.Labels, owner)
	}
	get := func(name string) corev1.ConfigMap {
		var c corev1.ConfigMap
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: taskfileNS, Name: name}, &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c
	}
	if l := get("bool-label").Labels; len(l) != 2 || l["team"] != "" {
		t.Errorf("bool-label: labels %v, want only the owner labels (team dropped with enabled)", l)
	}
	if a := get("bool-annotation").Annotations; a["enabled"] != "true" || a["note"] != "web" {
		t.Errorf("bool-annotation: annotations %v, want enabled: \"true\", note: web", a)
	}
	if l := get("string-label").Labels; l["team"] != "web" {
		t.Errorf("string-label: labels %v, want team: web kept (the negative)", l)
	}
}
