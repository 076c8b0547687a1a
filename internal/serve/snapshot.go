package serve

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Snapshot is the repository as served: a bare repository holding one
// branch or tag at one commit, made from the directory that was checked.
type Snapshot struct {
	// Bare is the bare repository's directory (<dir>/<Name>.git).
	Bare string
	// Name is the repository name in the URL path, without .git.
	Name string
	// Ref is the ref served, refs/heads/<branch> or refs/tags/<tag>: the
	// one the root's GitRepository's spec.ref makes source-controller
	// check out.
	Ref string
	// Declared says what that spec.ref declares (DescribeRef).
	Declared string
	// Commit is the served commit's SHA.
	Commit string
	// FromCheckout is false when the directory was not a Git checkout and
	// its files were committed for serving.
	FromCheckout bool
	// Note says what the served repository adds that the checkout lacks
	// (a tag made at HEAD); "" when nothing.
	Note string

	revision string
}

// Revision is the artifact revision source-controller reports for it.
func (s *Snapshot) Revision() string { return s.revision }

// Describe says where the served commit came from, for reports.
func (s *Snapshot) Describe(repo string) string {
	served := strings.TrimPrefix(s.Ref, "refs/")
	served = strings.Replace(strings.Replace(served, "heads/", "branch ", 1), "tags/", "tag ", 1)
	var out string
	if s.FromCheckout {
		out = fmt.Sprintf("commit %s of the checkout %s, served as %s (%s)", short(s.Commit), repo, served, s.Declared)
	} else {
		out = fmt.Sprintf("%s is not a Git checkout: its files, served as one commit %s on %s (%s)", repo, short(s.Commit), served, s.Declared)
	}
	if s.Note != "" {
		out += "; " + s.Note
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// RepoName is the URL path's repository name.
const RepoName = "gitops"

// MakeSnapshot copies what is to be served into a bare repository under
// dir, as the ref the root's GitRepository declares makes source-controller
// check it out (WantOf): in a Git checkout, HEAD with a clean working tree
// (the files check read are the files the cluster gets), which must be on
// the declared branch, at the declared tag when the checkout has it, hold a
// tag in the declared semver range, or be the declared commit; a directory
// that is not a checkout is committed as it is, on the branch or tag. A
// dirty tree, another branch, a tag elsewhere, a range no tag at HEAD
// satisfies, another commit: an input error naming the fix.
func MakeSnapshot(ctx context.Context, repo string, ref *sourcev1.GitRepositoryRef, dir string) (*Snapshot, error) {
	w, err := WantOf(ref)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, verify.InputErrorf("--serve needs git on PATH (install git): %v", err)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, verify.InputErrorf("--repo %s: %w", repo, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, verify.InputErrorf("--repo %s: %w", repo, err)
	}
	s := &Snapshot{Name: RepoName, Declared: w.Declared, Bare: filepath.Join(dir, RepoName+".git")}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if _, err := git(ctx, "", nil, "init", "--quiet", "--bare", s.Bare); err != nil {
		return nil, err
	}
	top, err := git(ctx, abs, nil, "rev-parse", "--show-toplevel")
	if err == nil {
		if t, err := filepath.EvalSymlinks(top); err == nil && t == abs {
			s.FromCheckout = true
		}
	}
	if s.FromCheckout {
		err = fromCheckout(ctx, abs, w, s)
	} else {
		err = fromFiles(ctx, abs, w, s)
	}
	if err != nil {
		return nil, err
	}
	if w.Branch != "" {
		if _, err := git(ctx, s.Bare, nil, "symbolic-ref", "HEAD", "refs/heads/"+w.Branch); err != nil {
			return nil, err
		}
	}
	s.revision = w.Revision(s.Commit)
	return s, nil
}

// fromCheckout refuses a dirty tree or a checkout that is not what the ref
// declares (checkoutMatches), then fetches HEAD's commit into the bare
// repository as the branch or tag (a fetch from the checkout runs none of
// its hooks).
func fromCheckout(ctx context.Context, repo string, w *Want, s *Snapshot) error {
	head, _ := git(ctx, repo, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	var err error
	if s.Commit, err = git(ctx, repo, nil, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
		return err
	}
	if err := checkoutMatches(ctx, repo, head, w, s); err != nil {
		return err
	}
	status, err := git(ctx, repo, nil, "status", "--porcelain=v1", "--untracked-files=all")
	if err != nil {
		return err
	}
	if status != "" {
		lines := strings.Split(status, "\n")
		shown := lines
		if len(shown) > 10 {
			shown = append(shown[:10:10], fmt.Sprintf("… and %d more", len(lines)-10))
		}
		return verify.InputErrorf("--serve: the checkout %s has changes that are not committed, so the files checked are not the files the cluster would get:\n  %s\ncommit them (or stash them), then run again", repo, strings.Join(shown, "\n  "))
	}
	_, err = git(ctx, s.Bare, nil, "fetch", "--quiet", "--no-tags", repo, s.Commit+":"+s.Ref)
	return err
}

// checkoutMatches refuses a checkout whose HEAD is not what the ref
// declares, and sets s.Ref (and w.Tag, w.Reference for a semver range).
func checkoutMatches(ctx context.Context, repo, head string, w *Want, s *Snapshot) error {
	switch {
	case w.Commit != "":
		// source-controller checks out exactly this commit (gogit
		// cloneCommit: plumbing.NewHash, a full SHA).
		if s.Commit != w.Commit {
			return verify.InputErrorf("--serve: the root's GitRepository pins %s, but the checkout %s is at %s: run `git -C %s checkout %s` (the cluster must get the commit it declares), or change the commit in git",
				w.Declared, repo, s.Commit, repo, w.Commit)
		}
		s.Ref = "refs/heads/" + w.Branch
	case w.SemVer != "":
		out, err := git(ctx, repo, nil, "tag", "--points-at", "HEAD")
		if err != nil {
			return err
		}
		tags := strings.Fields(out)
		w.Tag = PickSemVer(w.SemVer, tags)
		if w.Tag == "" {
			here := "none"
			if len(tags) > 0 {
				here = strings.Join(tags, ", ")
			}
			return verify.InputErrorf("--serve: the root's GitRepository declares %s, and no tag at the checkout's HEAD %s satisfies it (tags there: %s), so the served repository would hold nothing source-controller checks out: tag the commit with a version in the range (`git -C %s tag vX.Y.Z`), or declare the branch in git (spec.ref.branch, or a FluxInstance's spec.sync.ref refs/heads/main)",
				w.Declared, short(s.Commit), here, repo)
		}
		w.Reference = "refs/tags/" + w.Tag
		s.Ref = w.Reference
	case w.Tag != "":
		s.Ref = "refs/tags/" + w.Tag
		at, err := git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", s.Ref+"^{commit}")
		switch {
		case err != nil || at == "":
			s.Note = fmt.Sprintf("the checkout has no tag %s: its HEAD is served as that tag", w.Tag)
		case at != s.Commit:
			return verify.InputErrorf("--serve: the root's GitRepository declares %s, and the checkout's tag %s is at %s, not at HEAD %s: run `git -C %s checkout %s` (the cluster must get the tag it declares), or move the tag",
				w.Declared, w.Tag, short(at), short(s.Commit), repo, w.Tag)
		}
	default:
		s.Ref = "refs/heads/" + w.Branch
		why := ""
		if w.Declared == "no spec.ref" {
			why = fmt.Sprintf(" (it declares no spec.ref, so source-controller checks out its default branch %s; or declare the branch in git)", DefaultBranch)
		}
		if head == "" {
			return verify.InputErrorf("--serve: the checkout %s is not on a branch (detached HEAD); the root's GitRepository declares %s: run `git -C %s switch %s`%s", repo, w.Declared, repo, w.Branch, why)
		}
		if head != w.Branch {
			return verify.InputErrorf("--serve: the checkout %s is on branch %s, but the root's GitRepository declares %s: run `git -C %s switch %s` (the cluster must get the branch it declares)%s", repo, head, w.Declared, repo, w.Branch, why)
		}
	}
	return nil
}

// fromFiles commits every file of a directory that is not a checkout, as it
// is, to the branch or tag (a private index; the directory is only read). A
// commit or a semver range cannot be served from one: it holds neither.
func fromFiles(ctx context.Context, dir string, w *Want, s *Snapshot) error {
	switch {
	case w.Commit != "":
		return verify.InputErrorf("--serve: the root's GitRepository pins %s, and %s is not a Git checkout, so it cannot be that commit: run from a checkout at %s, or change the ref in git", w.Declared, dir, w.Commit)
	case w.SemVer != "":
		return verify.InputErrorf("--serve: the root's GitRepository declares %s, and %s is not a Git checkout, so it has no tag in that range: run from a checkout with a tag in the range at HEAD, or declare the branch in git", w.Declared, dir)
	case w.Tag != "":
		s.Ref = "refs/tags/" + w.Tag
	default:
		s.Ref = "refs/heads/" + w.Branch
	}
	env := []string{
		"GIT_DIR=" + s.Bare, "GIT_WORK_TREE=" + dir, "GIT_INDEX_FILE=" + filepath.Join(filepath.Dir(s.Bare), "index"),
		"GIT_AUTHOR_NAME=bootstrap", "GIT_AUTHOR_EMAIL=bootstrap@localhost",
		"GIT_COMMITTER_NAME=bootstrap", "GIT_COMMITTER_EMAIL=bootstrap@localhost",
	}
	defer os.Remove(filepath.Join(filepath.Dir(s.Bare), "index"))
	if _, err := git(ctx, "", env, "add", "--all", "--force", "."); err != nil {
		return err
	}
	tree, err := git(ctx, "", env, "write-tree")
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("bootstrap --serve: the files of %s at %s", dir, time.Now().UTC().Format(time.RFC3339))
	if s.Commit, err = git(ctx, "", env, "commit-tree", tree, "-m", msg); err != nil {
		return err
	}
	_, err = git(ctx, "", env, "update-ref", s.Ref, s.Commit)
	return err
}

// git runs git with the operator's own configuration (safe.directory and
// excludes apply to their checkout as to their shell) and never prompts; it
// returns the trimmed output.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
