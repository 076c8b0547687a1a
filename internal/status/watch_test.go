package status

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/kube"
)

// noWatchList is the fake client declaring it cannot stream lists.
type noWatchList struct{ client.WithWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// TestWatch: one evaluation at once, another for a change made while it
// read, none for what already existed, one per change seen by the watches (a Kustomization, the age-key Secret),
// none for another Secret, and Watch returns when its context ends.
func TestWatch(t *testing.T) {
	s, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	existing := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(existing).Build()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var causes []string
	evals := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, noWatchList{c}, WatchOptions{Namespace: "flux-system", Secret: "sops-age", Debounce: 50 * time.Millisecond}, func(cause string) {
			mu.Lock()
			causes = append(causes, cause)
			first := len(causes) == 1
			mu.Unlock()
			if first {
				// A change made while the first evaluation reads.
				if err := c.Create(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "during"}}); err != nil {
					t.Error(err)
				}
			}
			evals <- cause
		})
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case c := <-evals:
			return c
		case <-time.After(10 * time.Second):
			t.Fatalf("no evaluation after %s", what)
		}
		return ""
	}
	if c := next("start"); c != "" {
		t.Fatalf("first evaluation: cause %q, want none", c)
	}
	if c := next("a change during the first evaluation"); c != "Kustomization flux-system/during" {
		t.Fatalf("second evaluation: cause %q, want the Kustomization created during the first", c)
	}
	// What existed before is not a change.
	time.Sleep(500 * time.Millisecond)
	select {
	case c := <-evals:
		t.Fatalf("an evaluation for what already existed: %q", c)
	default:
	}
	if err := c.Create(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	if c := next("a new Kustomization"); c != "Kustomization flux-system/apps" {
		t.Errorf("cause %q", c)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "sops-age"}}); err != nil {
		t.Fatal(err)
	}
	if c := next("the age-key Secret"); c != "Secret flux-system/sops-age" {
		t.Errorf("cause %q, want the age-key Secret (another Secret is not watched)", c)
	}
	// A HelmRelease lives in its application's namespace, not Flux's.
	if err := c.Create(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	if c := next("a HelmRelease in another namespace"); c != "HelmRelease apps/web" {
		t.Errorf("cause %q, want the HelmRelease", c)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return when its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(causes) != 5 {
		t.Errorf("%d evaluations %q, want 5", len(causes), causes)
	}
}

// failingList is a cluster whose lists always fail (a Kind it does not
// serve, an API server gone).
type failingList struct{ noWatchList }

func (failingList) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("no matches for kind")
}

// TestWatchSyncTimeout: watches that cannot list end Watch with an error
// naming the limit, without an evaluation, instead of waiting for ever.
func TestWatchSyncTimeout(t *testing.T) {
	s, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := failingList{noWatchList{fake.NewClientBuilder().WithScheme(s).Build()}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evals := 0
	err = Watch(ctx, c, WatchOptions{Namespace: "flux-system", SyncTimeout: 300 * time.Millisecond}, func(string) { evals++ })
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "did not list within 300ms") {
		t.Fatalf("Watch: %v (ctx %v), want the sync limit named", err, ctx.Err())
	}
	if evals != 0 {
		t.Errorf("%d evaluation(s) without a listed cluster", evals)
	}
}
