package cutover

import (
	"reflect"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

// TestApplyObjectRestoresDeclaredRef: the switch to the final source puts
// back the whole ref git declares (not only a branch), drops a temporary
// branch when git declares none, and the hand-back keeps what is there.
func TestApplyObjectRestoresDeclaredRef(t *testing.T) {
	live := func(ref map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"url": "https://127.0.0.1:1/gitops.git", "interval": "1m", "secretRef": map[string]any{"name": "bootstrap-serve"}}
		if ref != nil {
			spec["ref"] = ref
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetNamespace("flux-system")
		u.SetName("flux-system")
		return u
	}
	for _, c := range []struct {
		name     string
		live     map[string]any
		declared *sourcev1.GitRepositoryRef
		tmp      *rootsync.Temporary
		keepRef  bool
		want     map[string]any // nil: no spec.ref
	}{
		{"the operator's name, served as declared", map[string]any{"name": "refs/heads/main"}, &sourcev1.GitRepositoryRef{Name: "refs/heads/main"}, &rootsync.Temporary{}, false, map[string]any{"name": "refs/heads/main"}},
		{"a tag after --source-branch", map[string]any{"branch": "bring-up"}, &sourcev1.GitRepositoryRef{Tag: "v1.2.0"}, &rootsync.Temporary{Branch: "bring-up"}, false, map[string]any{"tag": "v1.2.0"}},
		{"semver and branch", map[string]any{"branch": "bring-up"}, &sourcev1.GitRepositoryRef{SemVer: ">=1.0.0", Branch: "main"}, &rootsync.Temporary{Branch: "bring-up"}, false, map[string]any{"semver": ">=1.0.0", "branch": "main"}},
		{"none declared after --source-branch", map[string]any{"branch": "bring-up"}, nil, &rootsync.Temporary{Branch: "bring-up"}, false, nil},
		{"none declared, served", nil, nil, &rootsync.Temporary{}, false, nil},
		{"hand-back keeps the ref", map[string]any{"commit": "abc"}, &sourcev1.GitRepositoryRef{Tag: "v1"}, nil, true, map[string]any{"commit": "abc"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := applyObject(live(c.live), "https://git.example.invalid/x.git", rootsync.Declared{URL: "https://git.example.invalid/x.git", Ref: c.declared, Secret: "flux-system"}, c.tmp, c.keepRef, nil)
			got, _, _ := unstructured.NestedMap(o.Object, "spec", "ref")
			if !reflect.DeepEqual(got, c.want) && !(got == nil && c.want == nil) {
				t.Fatalf("spec.ref %v, want %v", got, c.want)
			}
			if s, _, _ := unstructured.NestedString(o.Object, "spec", "secretRef", "name"); s != "flux-system" {
				t.Fatalf("secretRef %q", s)
			}
		})
	}
}
