package rootsync

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSourceReady: sync.source-ready's condition, clause by clause; with
// --serve an artifact that is not the served commit never passes.
func TestSourceReady(t *testing.T) {
	const url, served = "https://10.0.0.1:8443/homelab.git", "main@sha1:1111111111111111111111111111111111111111"
	gitRepo := func(rev, handled string) *sourcev1.GitRepository {
		g := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", Generation: 2}}
		g.Spec.URL = url
		g.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded", ObservedGeneration: 2}}
		g.Status.LastHandledReconcileAt, g.Status.ObservedGeneration = handled, 2
		if rev != "" {
			g.Status.Artifact = &meta.Artifact{Revision: rev}
		}
		return g
	}
	for _, tt := range []struct {
		name                   string
		g                      *sourcev1.GitRepository
		token, wantURL, served string
		ok                     bool
		says                   string
	}{
		{"ready at the served commit", gitRepo(served, "t1"), "t1", url, served, true, ""},
		{"ready, no --serve", gitRepo("main@sha1:2222222222222222222222222222222222222222", ""), "", url, "", true, ""},
		{"another commit than the served one", gitRepo("main@sha1:2222222222222222222222222222222222222222", "t1"), "t1", url, served, false, "not the served " + served},
		{"the fetch asked for not handled yet", gitRepo(served, "t0"), "t1", url, served, false, "not handled yet"},
		{"no artifact", gitRepo("", "t1"), "t1", url, served, false, ""},
		{"another URL", gitRepo(served, "t1"), "t1", "https://git.example.com/homelab.git", served, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, desc := sourceReady(tt.g, tt.token, tt.wantURL, tt.served)
			if ok != tt.ok || !strings.Contains(desc, tt.says) {
				t.Fatalf("sourceReady = %t, %q; want %t saying %q", ok, desc, tt.ok, tt.says)
			}
		})
	}
}
