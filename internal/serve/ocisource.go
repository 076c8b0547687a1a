package serve

// --serve for an OCI root (issue 46 item 4b), wired: the snapshot's commit
// extracted to a tree, served as one Flux OCI artifact (OCIHandler) at the
// tag the OCIRepository's override reads, probed and watched as Git's is.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/homelab-ops/bootstrap/internal/ociartifact"
)

// OCIServedTag is the tag an OCI root is served at when what it declares
// is not one tag: a digest (the served artifact's digest is not the
// declared one) or a semver range (any tag satisfies the override, which
// names this tag).
const OCIServedTag = "bootstrap-serve"

// OCITagOf is the tag --serve serves an OCIRepository's artifact at, for
// its declared ref, and why: the declared tag; "latest" when none is
// declared (source-controller's default, ocirepository_controller.go
// getArtifactRef); OCIServedTag for a digest or a semver range.
func OCITagOf(ref *sourcev1.OCIRepositoryRef) (tag, why string) {
	switch {
	case ref == nil || (ref.Digest == "" && ref.SemVer == "" && ref.Tag == ""):
		return name.DefaultTag, "no ref declared: the default tag " + name.DefaultTag
	case ref.Digest != "":
		return OCIServedTag, fmt.Sprintf("git declares digest %s, which the served artifact cannot have: served as tag %s", ref.Digest, OCIServedTag)
	case ref.SemVer != "":
		return OCIServedTag, fmt.Sprintf("git declares semver %s: served as tag %s", ref.SemVer, OCIServedTag)
	}
	return ref.Tag, "the declared tag " + ref.Tag
}

// treeDir is where the served commit's files are, beside the bare
// repository of the snapshot.
func treeDir(snapDir string) string { return filepath.Join(snapDir, "tree") }

// ociGitRef is the ref the snapshot of an OCI root is made with: nothing
// in git names a branch, so a checkout is served at its HEAD commit (clean
// tree required, as for Git) and a plain directory as one commit.
func ociGitRef(ctx context.Context, repo string) *sourcev1.GitRepositoryRef {
	abs, err := filepath.Abs(repo)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil // MakeSnapshot names the error
	}
	top, err := git(ctx, abs, nil, "rev-parse", "--show-toplevel")
	if err == nil {
		if t, err := filepath.EvalSymlinks(top); err == nil && t == abs {
			if head, err := git(ctx, abs, nil, "rev-parse", "--verify", "HEAD^{commit}"); err == nil {
				return &sourcev1.GitRepositoryRef{Commit: head}
			}
		}
	}
	return &sourcev1.GitRepositoryRef{Branch: DefaultBranch}
}

// extractTree writes the snapshot's commit's files to dir (a private
// index; the checkout is not touched).
func extractTree(ctx context.Context, s *Snapshot, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	idx := filepath.Join(filepath.Dir(s.Bare), "tree.index")
	defer os.Remove(idx)
	env := []string{"GIT_DIR=" + s.Bare, "GIT_WORK_TREE=" + dir, "GIT_INDEX_FILE=" + idx}
	if _, err := git(ctx, "", env, "read-tree", s.Commit); err != nil {
		return err
	}
	_, err := git(ctx, dir, env, "checkout-index", "--all")
	return err
}

// ociMeta is the served artifact's metadata: made once by the parent and
// handed over, so the serving process builds the same digest.
func ociMeta(st *State) ociartifact.Meta {
	return ociartifact.Meta{Source: "bootstrap serve: " + st.Origin, Revision: "sha1:" + st.Commit, Created: st.Created}
}

// ProbeOCI pulls the served artifact's manifest at base (https://host:port)
// with the credentials, trusting only the run's CA, and wants rev
// (`<tag>@<digest>`).
func ProbeOCI(ctx context.Context, base string, c *Credentials, rev string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tag, _, _ := strings.Cut(rev, "@")
	ref, err := name.NewTag(OCIRef(strings.TrimPrefix(base, "https://")) + ":" + tag)
	if err != nil {
		return err
	}
	tr := &http.Transport{TLSClientConfig: c.ClientTLS()}
	defer tr.CloseIdleConnections()
	desc, err := remote.Head(ref, remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: Username, Password: c.Token}))
	if err != nil {
		return err
	}
	if got := tag + "@" + desc.Digest.String(); got != rev {
		return fmt.Errorf("HEAD %s: %s, not %s", ref, got, rev)
	}
	return nil
}
