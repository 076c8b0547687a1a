package gitserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Two servers, a push to each, and a clone over HTTP that sees the pushed
// commit; the negative case: a repo that does not exist cannot be cloned.
func TestServeCloneAndPush(t *testing.T) {
	if _, err := os.Stat(DefaultBackend); err != nil {
		t.Fatalf("git-http-backend missing (run hack/sandbox/install-deps.sh): %v", err)
	}
	ctx := context.Background()
	fixture := t.TempDir()
	if err := os.WriteFile(filepath.Join(fixture, "a.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for i := 0; i < 2; i++ {
		s, err := Start(t.TempDir(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		urls = append(urls, s.URL)
		repo, sha1, err := s.CreateRepo(ctx, "fleet", fixture)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		sha2, err := repo.Commit(ctx, "", map[string]string{"b.yaml": "b: 2\n"}, "second")
		if err != nil {
			t.Fatal(err)
		}
		if sha1 == sha2 {
			t.Fatalf("commit did not move HEAD")
		}
		clone := filepath.Join(t.TempDir(), "c")
		if out, err := exec.Command("git", "clone", "--quiet", repo.URL, clone).CombinedOutput(); err != nil {
			t.Fatalf("clone %s: %v: %s", repo.URL, err, out)
		}
		head, _ := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
		if strings.TrimSpace(string(head)) != sha2 {
			t.Fatalf("clone HEAD %s, want pushed %s", head, sha2)
		}
		if _, err := os.Stat(filepath.Join(clone, "b.yaml")); err != nil {
			t.Fatalf("pushed file missing from clone: %v", err)
		}
		if err := exec.Command("git", "clone", "--quiet", s.URL+"/missing.git", filepath.Join(t.TempDir(), "m")).Run(); err == nil {
			t.Fatalf("cloning a missing repo succeeded")
		}
	}
	if urls[0] == urls[1] {
		t.Fatalf("two servers share %s", urls[0])
	}
}
