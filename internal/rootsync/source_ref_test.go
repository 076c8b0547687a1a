package rootsync

import (
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestOverrideRecordsWholeRef: the record keeps every field of the declared
// spec.ref, so the cutover restores exactly it; an object an older version
// annotated with declared-branch still reads back.
func TestOverrideRecordsWholeRef(t *testing.T) {
	for _, c := range []struct {
		name   string
		ref    map[string]any
		branch string // the temporary --source-branch
		want   *sourcev1.GitRepositoryRef
	}{
		{"the Flux Operator's name", map[string]any{"name": "refs/heads/main"}, "", &sourcev1.GitRepositoryRef{Name: "refs/heads/main"}},
		{"a tag, with --source-branch", map[string]any{"tag": "v1.2.0", "branch": "main"}, "bring-up", &sourcev1.GitRepositoryRef{Tag: "v1.2.0", Branch: "main"}},
		{"semver", map[string]any{"semver": ">=1.0.0"}, "", &sourcev1.GitRepositoryRef{SemVer: ">=1.0.0"}},
		{"commit", map[string]any{"commit": "0123456789012345678901234567890123456789"}, "", &sourcev1.GitRepositoryRef{Commit: "0123456789012345678901234567890123456789"}},
		{"none", nil, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := map[string]any{"url": "https://git.example.invalid/x.git"}
			if c.ref != nil {
				spec["ref"] = c.ref
			}
			src := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
			src.SetNamespace("flux-system")
			src.SetName("flux-system")
			if err := Override(src, &Temporary{URL: "https://127.0.0.1:1/gitops.git", Branch: c.branch, Since: time.Now()}); err != nil {
				t.Fatal(err)
			}
			_, d := TemporaryOf(src)
			if (d.Ref == nil) != (c.want == nil) || (d.Ref != nil && *d.Ref != *c.want) {
				t.Fatalf("declared ref %+v, want %+v (annotations %v)", d.Ref, c.want, src.GetAnnotations())
			}
			live := DeclaredOf(src).Ref
			switch {
			case c.branch != "" && (live == nil || *live != sourcev1.GitRepositoryRef{Branch: c.branch}):
				t.Errorf("--source-branch: spec.ref %+v, want branch %s alone", live, c.branch)
			case c.branch == "" && ((live == nil) != (c.want == nil) || (live != nil && *live != *c.want)):
				t.Errorf("spec.ref %+v, want the declared one kept", live)
			}
		})
	}
	old := &unstructured.Unstructured{}
	old.SetAnnotations(map[string]string{AnnSource: SourceTemporary, AnnTemporaryURL: "https://x/gitops.git", AnnDeclaredURL: "https://y/z.git", AnnDeclaredBranch: "main"})
	if _, d := TemporaryOf(old); d.Ref == nil || *d.Ref != (sourcev1.GitRepositoryRef{Branch: "main"}) {
		t.Errorf("an older record (declared-branch): %+v", d.Ref)
	}
}
