package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestReadOnly: reads reach the server and are counted by verb; a write is
// refused in the process and never reaches the server.
func TestReadOnly(t *testing.T) {
	var seen atomic.Int64
	var writes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/configmaps"):
			_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"ns"}}`))
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	rec := NewRequests()
	ReadOnly(cfg, rec)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list: %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps("ns").Patch(ctx, "x", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "read-only: refused PATCH") {
		t.Fatalf("a patch must be refused, got %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "y"}}, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a create must be refused")
	}
	if writes.Load() != 0 || seen.Load() != 2 {
		t.Errorf("the server saw %d request(s), %d write(s); want 2 reads only", seen.Load(), writes.Load())
	}
	v := rec.Verbs()
	if v["get"] != 1 || v["list"] != 1 || v["patch"] != 1 || v["create"] != 1 || len(rec.Refused()) != 2 {
		t.Errorf("recorded %v, refused %v", v, rec.Refused())
	}
}

func TestReadVerb(t *testing.T) {
	for path, want := range map[string]string{
		"/version": "get",
		"/api/v1":  "get",
		"/apis/apps/v1/namespaces/flux-system/deployments":                                      "list",
		"/apis/apps/v1/namespaces/flux-system/deployments/kustomize-controller":                 "get",
		"/api/v1/namespaces/flux-system":                                                        "get",
		"/api/v1/namespaces":                                                                    "list",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions":                               "list",
		"/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations?watch=true": "watch",
	} {
		r, err := http.NewRequest(http.MethodGet, "https://x"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := readVerb(r); got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

// TestVerb: writes are named by verb, a server-side apply and any dry run
// told apart from other patches.
func TestVerb(t *testing.T) {
	for _, tt := range []struct{ method, url, contentType, want string }{
		{http.MethodPatch, "/api/v1/namespaces/ns/configmaps/x?fieldManager=bootstrap&force=true", "application/apply-patch+yaml", "apply"},
		{http.MethodPatch, "/api/v1/namespaces/ns/configmaps/x?dryRun=All&fieldManager=bootstrap", "application/apply-patch+yaml", "dry-run"},
		{http.MethodPatch, "/api/v1/namespaces/ns/configmaps/x", "application/merge-patch+json", "patch"},
		{http.MethodPost, "/api/v1/namespaces/ns/configmaps", "application/json", "create"},
		{http.MethodPut, "/api/v1/namespaces/ns/configmaps/x", "application/json", "update"},
		{http.MethodDelete, "/api/v1/namespaces/ns/configmaps/x", "", "delete"},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps", "", "list"},
	} {
		r, err := http.NewRequest(tt.method, "https://x"+tt.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", tt.contentType)
		if got := Verb(r); got != tt.want {
			t.Errorf("%s %s (%s): %q, want %q", tt.method, tt.url, tt.contentType, got, tt.want)
		}
	}
}
