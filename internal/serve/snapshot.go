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

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Snapshot is the repository as served: a bare repository holding one
// branch at one commit, made from the directory that was checked.
type Snapshot struct {
	// Bare is the bare repository's directory (<dir>/<Name>.git).
	Bare string
	// Name is the repository name in the URL path, without .git.
	Name string
	// Branch is the branch served: the one the root's GitRepository declares.
	Branch string
	// Commit is the served commit's SHA.
	Commit string
	// FromCheckout is false when the directory was not a Git checkout and
	// its files were committed for serving.
	FromCheckout bool
}

// Revision is the artifact revision source-controller reports for it.
func (s *Snapshot) Revision() string { return s.Branch + "@sha1:" + s.Commit }

// Describe says where the served commit came from, for reports.
func (s *Snapshot) Describe(repo string) string {
	if s.FromCheckout {
		return fmt.Sprintf("commit %s of branch %s of the checkout %s", short(s.Commit), s.Branch, repo)
	}
	return fmt.Sprintf("%s is not a Git checkout: its files, served as one commit %s on branch %s", repo, short(s.Commit), s.Branch)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// RepoName is the URL path's repository name.
const RepoName = "gitops"

// MakeSnapshot copies what is to be served into a bare repository under dir:
// in a Git checkout, HEAD, which must be the branch the root's GitRepository
// declares with a clean working tree (the files check read are the files the
// cluster gets); a directory that is not a checkout is committed as it is,
// on branch. A dirty tree or another branch is an input error naming the
// files or the branch and the fix.
func MakeSnapshot(ctx context.Context, repo, branch, dir string) (*Snapshot, error) {
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
	s := &Snapshot{Name: RepoName, Branch: branch, Bare: filepath.Join(dir, RepoName+".git")}
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
		err = fromCheckout(ctx, abs, s)
	} else {
		err = fromFiles(ctx, abs, s)
	}
	if err != nil {
		return nil, err
	}
	if _, err := git(ctx, s.Bare, nil, "symbolic-ref", "HEAD", "refs/heads/"+branch); err != nil {
		return nil, err
	}
	return s, nil
}

// fromCheckout refuses another branch or a dirty tree, then fetches HEAD's
// commit into the bare repository as the branch (a fetch from the checkout
// runs none of its hooks).
func fromCheckout(ctx context.Context, repo string, s *Snapshot) error {
	head, err := git(ctx, repo, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || head == "" {
		return verify.InputErrorf("--serve: the checkout %s is not on a branch (detached HEAD); the root's GitRepository declares branch %s: run `git -C %s switch %s`", repo, s.Branch, repo, s.Branch)
	}
	if head != s.Branch {
		return verify.InputErrorf("--serve: the checkout %s is on branch %s, but the root's GitRepository declares branch %s: run `git -C %s switch %s` (the cluster must get the branch it declares)", repo, head, s.Branch, repo, s.Branch)
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
	if s.Commit, err = git(ctx, repo, nil, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
		return err
	}
	_, err = git(ctx, s.Bare, nil, "fetch", "--quiet", "--no-tags", repo, s.Commit+":refs/heads/"+s.Branch)
	return err
}

// fromFiles commits every file of a directory that is not a checkout, as it
// is, to the branch (a private index; the directory is only read).
func fromFiles(ctx context.Context, dir string, s *Snapshot) error {
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
	_, err = git(ctx, "", env, "update-ref", "refs/heads/"+s.Branch, s.Commit)
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
