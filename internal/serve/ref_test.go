package serve

import (
	"context"
	"strings"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

var mainRef = &sourcev1.GitRepositoryRef{Branch: "main"}

// TestWantOf: the strategy fluxcd/pkg/git picks (commit > name > tag >
// semver > branch, default master) and the reference the revision is
// reported under.
func TestWantOf(t *testing.T) {
	for _, c := range []struct {
		name                                   string
		ref                                    *sourcev1.GitRepositoryRef
		branch, tag, semver, commit, reference string
		refused                                string
	}{
		{name: "none: master", ref: nil, branch: "master", reference: "refs/heads/master"},
		{name: "empty: master", ref: &sourcev1.GitRepositoryRef{}, branch: "master", reference: "refs/heads/master"},
		{name: "branch", ref: mainRef, branch: "main", reference: "refs/heads/main"},
		{name: "name refs/heads", ref: &sourcev1.GitRepositoryRef{Name: "refs/heads/main"}, branch: "main", reference: "refs/heads/main"},
		{name: "name over branch", ref: &sourcev1.GitRepositoryRef{Name: "refs/heads/prod", Branch: "main"}, branch: "prod", reference: "refs/heads/prod"},
		{name: "name refs/tags", ref: &sourcev1.GitRepositoryRef{Name: "refs/tags/v1.2.0"}, tag: "v1.2.0", reference: "refs/tags/v1.2.0"},
		{name: "name refs/tags dereferenced", ref: &sourcev1.GitRepositoryRef{Name: "refs/tags/v1^{}"}, tag: "v1", reference: "refs/tags/v1^{}"},
		{name: "tag over branch", ref: &sourcev1.GitRepositoryRef{Tag: "v1", Branch: "main"}, tag: "v1", reference: "refs/tags/v1"},
		{name: "tag over semver (the code, not the doc comment)", ref: &sourcev1.GitRepositoryRef{Tag: "v1", SemVer: ">=2"}, tag: "v1", reference: "refs/tags/v1"},
		{name: "semver", ref: &sourcev1.GitRepositoryRef{SemVer: ">=1.0.0", Branch: "main"}, semver: ">=1.0.0"},
		{name: "commit alone", ref: &sourcev1.GitRepositoryRef{Commit: "abc"}, commit: "abc", branch: "main"},
		{name: "commit with branch", ref: &sourcev1.GitRepositoryRef{Commit: "abc", Branch: "prod"}, commit: "abc", branch: "prod", reference: "refs/heads/prod"},
		{name: "commit over name", ref: &sourcev1.GitRepositoryRef{Commit: "abc", Name: "refs/pull/1/head"}, commit: "abc", branch: "main", reference: "refs/pull/1/head"},
		{name: "pull request", ref: &sourcev1.GitRepositoryRef{Name: "refs/pull/420/head"}, refused: "--source-url"},
		{name: "merge request", ref: &sourcev1.GitRepositoryRef{Name: "refs/merge-requests/1/head"}, refused: "refs/heads/main"},
		{name: "bad semver", ref: &sourcev1.GitRepositoryRef{SemVer: "not a range"}, refused: "not a semver range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := WantOf(c.ref)
			if c.refused != "" {
				if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("want an input error naming %q, got %v", c.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Branch != c.branch || w.Tag != c.tag || w.SemVer != c.semver || w.Commit != c.commit || w.Reference != c.reference {
				t.Fatalf("got %+v", w)
			}
		})
	}
}

func TestRevision(t *testing.T) {
	for _, c := range []struct {
		ref      string
		absolute bool
		want     string
	}{
		{"refs/heads/main", false, "main@sha1:abc"},
		{"refs/heads/a/b", false, "a/b@sha1:abc"},
		{"refs/tags/v1", false, "v1@sha1:abc"},
		{"refs/heads/main", true, "refs/heads/main@sha1:abc"}, // spec.ref.name
		{"refs/tags/v1", true, "refs/tags/v1@sha1:abc"},
		{"", false, "sha1:abc"},
		{"", true, "sha1:abc"},
	} {
		if got := Revision(c.ref, "abc", c.absolute); got != c.want {
			t.Errorf("Revision(%q, %v) = %s, want %s", c.ref, c.absolute, got, c.want)
		}
	}
}

func TestPickSemVer(t *testing.T) {
	for _, c := range []struct {
		rng  string
		tags []string
		want string
	}{
		{">=1.0.0", []string{"v1.0.0", "v1.2.0", "latest"}, "v1.2.0"},
		{"~1.0", []string{"v1.0.3", "v1.2.0"}, "v1.0.3"},
		{">=2.0.0", []string{"v1.0.0"}, ""},
		{">=1.0.0", []string{"v1"}, ""}, // fluxcd/pkg/version wants three parts
		{">=1.0.0", nil, ""},
	} {
		if got := PickSemVer(c.rng, c.tags); got != c.want {
			t.Errorf("PickSemVer(%s, %v) = %q, want %q", c.rng, c.tags, got, c.want)
		}
	}
}

func TestRefOfAndMap(t *testing.T) {
	src := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"ref": map[string]any{"name": "refs/heads/main"}}}}
	ref, err := RefOf(src)
	if err != nil || ref == nil || ref.Name != "refs/heads/main" {
		t.Fatalf("RefOf: %+v %v", ref, err)
	}
	if m := RefMap(ref); len(m) != 1 || m["name"] != "refs/heads/main" {
		t.Fatalf("RefMap: %v", m)
	}
	if ref, err := RefOf(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}); ref != nil || err != nil {
		t.Fatalf("no spec.ref: %+v %v", ref, err)
	}
	if d := DescribeRef(&sourcev1.GitRepositoryRef{Commit: "abc", Branch: "main"}); d != "spec.ref.commit abc, spec.ref.branch main" {
		t.Fatalf("DescribeRef: %s", d)
	}
}

// TestSnapshotRefs: what each ref serves from a checkout, the revision
// source-controller reports for it, and the refusals naming the fix.
func TestSnapshotRefs(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		ref     *sourcev1.GitRepositoryRef
		prep    func(t *testing.T, repo string)
		served  string // the ref in the bare repository
		rev     string // revision, with HEAD for the commit
		note    string
		refused string
	}{
		{name: "name refs/heads/main", ref: &sourcev1.GitRepositoryRef{Name: "refs/heads/main"}, served: "refs/heads/main", rev: "refs/heads/main@sha1:HEAD"},
		{name: "name refs/heads on another branch", ref: &sourcev1.GitRepositoryRef{Name: "refs/heads/prod"}, refused: "switch prod"},
		{name: "no ref: master", ref: nil, refused: "default branch master"},
		{name: "tag not in the checkout: made at HEAD", ref: &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, served: "refs/tags/v1.0.0", rev: "v1.0.0@sha1:HEAD", note: "no tag v1.0.0"},
		{name: "tag at HEAD, detached", ref: &sourcev1.GitRepositoryRef{Name: "refs/tags/v1.0.0"}, prep: func(t *testing.T, repo string) {
			run(t, repo, nil, "tag", "-a", "-m", "one", "v1.0.0")
			run(t, repo, nil, "switch", "--quiet", "--detach")
		}, served: "refs/tags/v1.0.0", rev: "refs/tags/v1.0.0@sha1:HEAD"},
		{name: "tag elsewhere", ref: &sourcev1.GitRepositoryRef{Tag: "v0.9.0"}, prep: func(t *testing.T, repo string) {
			run(t, repo, nil, "tag", "v0.9.0")
			run(t, repo, nil, "commit", "--quiet", "--allow-empty", "-m", "two")
		}, refused: "checkout v0.9.0"},
		{name: "semver picks the highest tag at HEAD", ref: &sourcev1.GitRepositoryRef{SemVer: "1.x"}, prep: func(t *testing.T, repo string) {
			run(t, repo, nil, "tag", "v1.0.0")
			run(t, repo, nil, "tag", "v1.1.0")
			run(t, repo, nil, "tag", "v2.0.0")
		}, served: "refs/tags/v1.1.0", rev: "v1.1.0@sha1:HEAD"},
		{name: "semver no tag satisfies", ref: &sourcev1.GitRepositoryRef{SemVer: ">=2.0.0"}, prep: func(t *testing.T, repo string) {
			run(t, repo, nil, "tag", "v1.0.0")
		}, refused: "git -C"},
		{name: "commit at HEAD", ref: &sourcev1.GitRepositoryRef{Commit: "HEAD"}, served: "refs/heads/main", rev: "sha1:HEAD"},
		{name: "commit with branch", ref: &sourcev1.GitRepositoryRef{Commit: "HEAD", Branch: "main"}, served: "refs/heads/main", rev: "main@sha1:HEAD"},
		{name: "commit elsewhere", ref: &sourcev1.GitRepositoryRef{Commit: "0123456789012345678901234567890123456789"}, refused: "checkout 0123456789012345678901234567890123456789"},
		{name: "pull request", ref: &sourcev1.GitRepositoryRef{Name: "refs/pull/1/head"}, refused: "--source-url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := checkout(t)
			if c.prep != nil {
				c.prep(t, repo)
			}
			head := run(t, repo, nil, "rev-parse", "HEAD")
			ref := c.ref
			if ref != nil && ref.Commit == "HEAD" {
				cp := *ref
				cp.Commit = head
				ref = &cp
			}
			s, err := MakeSnapshot(ctx, repo, ref, t.TempDir())
			if c.refused != "" {
				if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("want an input error naming %q, got %v", c.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Ref != c.served || s.Commit != head || s.Revision() != strings.ReplaceAll(c.rev, "HEAD", head) || !strings.Contains(s.Note, c.note) {
				t.Fatalf("snapshot %+v (revision %s), want %s at %s, revision %s", s, s.Revision(), c.served, head, c.rev)
			}
			if got := run(t, s.Bare, nil, "rev-parse", s.Ref+"^{commit}"); got != head {
				t.Fatalf("bare %s at %s, want %s", s.Ref, got, head)
			}
			if refs := run(t, s.Bare, nil, "for-each-ref", "--format=%(refname)"); refs != s.Ref {
				t.Fatalf("the bare repository holds %q, want only %s", refs, s.Ref)
			}
		})
	}
}

// TestSnapshotFilesRefs: a directory that is not a checkout is served as
// a tag as well as a branch; a commit or a semver range is refused.
func TestSnapshotFilesRefs(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	s, err := MakeSnapshot(context.Background(), dir, &sourcev1.GitRepositoryRef{Tag: "v1"}, t.TempDir())
	if err != nil || s.Ref != "refs/tags/v1" || s.Revision() != "v1@sha1:"+s.Commit {
		t.Fatalf("tag from files: %+v %v", s, err)
	}
	for _, ref := range []*sourcev1.GitRepositoryRef{{Commit: "0123456789012345678901234567890123456789"}, {SemVer: ">=1.0.0"}} {
		if _, err := MakeSnapshot(context.Background(), dir, ref, t.TempDir()); err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), "not a Git checkout") {
			t.Errorf("%+v from files: want refused, got %v", ref, err)
		}
	}
}
