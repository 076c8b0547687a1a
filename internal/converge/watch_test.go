package converge

import (
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestWatchLibraryInformers: a cluster with a REST config gets
// controller-runtime's cache; one whose API server refuses connections
// fails the walk with the watch error at its timeout, and one without
// Flux's CRDs at once (the negative cases of the cache path: the unit
// tests' fake serves no HTTP, so the positive one is e2e's TestConverge), and one without a REST config (the fake) gets
// client-go informers on wait.ListWatch.
func TestWatchLibraryInformers(t *testing.T) {
	cl, ctx, stop := phaseWorld(t, nil)
	defer stop()
	if s, err := NewPhase(nil, Options{}).withCluster(cl).informers("flux-system"); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(*listWatchInformers); !ok {
		t.Fatalf("no REST config: %T, want *listWatchInformers", s)
	}
	refused := *cl
	refused.Config = &rest.Config{Host: "http://127.0.0.1:1"}
	if s, err := NewPhase(nil, Options{}).withCluster(&refused).informers("flux-system"); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(*crInformers); !ok {
		t.Fatalf("REST config: %T, want *crInformers", s)
	}

	// The fake client's REST mapper knows no Flux kind, as an API server
	// without Flux's CRDs: the cache says so at once. With a mapper that
	// knows them, the refused connection is the sync error at the timeout.
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(kustomizev1.GroupVersion.WithKind("Kustomization"), meta.RESTScopeNamespace)
	m.Add(sourcev1.GroupVersion.WithKind("GitRepository"), meta.RESTScopeNamespace)
	mapped := refused
	mapped.Client = withMapper{refused.Client, m}
	for _, tc := range []struct {
		name string
		cl   *apply.Cluster
		want string
	}{
		{"no CRDs", &refused, "the watch on Kustomization: failed to get restmapping: no matches for kind"},
		{"refused", &mapped, "the watches on Kustomizations and sources did not sync within 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Timeout = time.Second
			o.Declared = []*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system")}
			p := NewPhase(func() (*apply.Cluster, error) { return tc.cl, nil }, o)
			run := &pipeline.Run{Report: verify.NewReport(PhaseName), Progress: func(string) {}, Now: time.Now}
			if _, err := p.Before(ctx, run); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := p.Do(ctx, run)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "are Flux's CRDs installed?") {
				t.Fatalf("Do = %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Do took %s with a 1s timeout", d)
			}
		})
	}
}

// withMapper is a client with another REST mapper.
type withMapper struct {
	client.WithWatch
	m meta.RESTMapper
}

func (c withMapper) RESTMapper() meta.RESTMapper { return c.m }

// withCluster sets the phase's cluster without connecting, for tests.
func (p *Phase) withCluster(cl *apply.Cluster) *Phase { p.cl = cl; return p }
