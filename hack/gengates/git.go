package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// maxGitFile bounds one extracted file: the largest Go file of these
// repositories is far smaller; anything bigger is not source worth reading.
const maxGitFile = 8 << 20

// pseudoRE matches the commit of a pseudo-version (vX.Y.Z-yyyymmddhhmmss-abcdefabcdef).
var pseudoRE = regexp.MustCompile(`-[0-9]{14}-([0-9a-f]{12})$`)

// gitModule extracts module@version from its repository's git clone in the
// mirrors: the tree of the tag the Go toolchain maps the version to (or, for
// a pseudo-version, of its commit). It returns "" and why when the mirrors
// cannot give it (no clone, no such tag, a go.mod naming another module):
// the caller then asks the module proxy. An error is a broken clone.
func (mc *modCache) gitModule(mv string) (dir, why string, err error) {
	module, version, ok := strings.Cut(mv, "@")
	if !ok {
		return "", "", fmt.Errorf("%s: not module@version", mv)
	}
	repo, subdir, ok := moduleRepo(module)
	if !ok {
		return "", "not a github.com module", nil
	}
	gitDir, err := mc.gitDir(repo)
	if err != nil {
		return "", "", err
	}
	if gitDir == "" {
		return "", fmt.Sprintf("no git clone of %s in %s", repo, mc.mirrors), nil
	}
	rev := "refs/tags/" + version
	if subdir != "" {
		rev = "refs/tags/" + subdir + "/" + version
	}
	if m := pseudoRE.FindStringSubmatch(version); m != nil {
		rev = m[1]
	}
	commit, err := git(gitDir, "rev-parse", "-q", "--verify", rev+"^{commit}")
	if err != nil {
		return "", fmt.Sprintf("no %s in %s", strings.TrimPrefix(rev, "refs/tags/"), gitDir), nil
	}
	commit = strings.TrimSpace(commit)
	treeish := commit
	if subdir != "" {
		treeish += ":" + subdir
	}
	dir = filepath.Join(mc.work, "git", strings.NewReplacer("/", "_", "@", "_").Replace(mv))
	if err := extractTree(gitDir, treeish, dir); err != nil {
		return "", "", fmt.Errorf("%s: %s of %s: %w", mv, treeish, gitDir, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Sprintf("%s of %s has no go.mod", rev, gitDir), nil
	}
	if got := modfile.ModulePath(data); got != module {
		return "", fmt.Sprintf("%s of %s: go.mod names module %q", rev, gitDir, got), nil
	}
	fmt.Fprintf(os.Stderr, "gengates: %s: %s of %s\n", mv, strings.TrimPrefix(rev, "refs/tags/"), gitDir)
	return dir, "", nil
}

// moduleRepo splits a github.com module path into its repository and the
// directory of the module in it, dropping a /vN major-version suffix
// (github.com/fluxcd/source-watcher/v2 is the root of fluxcd/source-watcher;
// github.com/fluxcd/pkg/runtime is runtime/ of fluxcd/pkg).
func moduleRepo(module string) (repo, subdir string, ok bool) {
	parts := strings.Split(module, "/")
	if len(parts) < 3 || parts[0] != "github.com" {
		return "", "", false
	}
	rest := parts[3:]
	if n := len(rest); n > 0 && len(rest[n-1]) > 1 && rest[n-1][0] == 'v' {
		if major, err := strconv.Atoi(rest[n-1][1:]); err == nil && major >= 2 {
			rest = rest[:n-1]
		}
	}
	return parts[1] + "/" + parts[2], strings.Join(rest, "/"), true
}

// gitDir is the git directory of owner/name in the mirrors, "" when there is
// none. It looks for owner+name/repo (the layout of a mirror store),
// owner/name.git, owner/name, name.git and name; a candidate counts only when
// git says it is itself a repository (not a directory inside another one).
func (mc *modCache) gitDir(repo string) (string, error) {
	if d, ok := mc.gitDirs[repo]; ok {
		return d, nil
	}
	owner, name, _ := strings.Cut(repo, "/")
	found := ""
	for _, c := range []string{
		filepath.Join(mc.mirrors, owner+"+"+name, "repo"),
		filepath.Join(mc.mirrors, owner, name+".git"),
		filepath.Join(mc.mirrors, owner, name),
		filepath.Join(mc.mirrors, name+".git"),
		filepath.Join(mc.mirrors, name),
	} {
		fi, err := os.Stat(c)
		if err != nil || !fi.IsDir() {
			continue
		}
		abs, err := filepath.Abs(c)
		if err != nil {
			return "", err
		}
		out, err := exec.Command("git", "-C", abs, "rev-parse", "--absolute-git-dir").Output()
		if err != nil {
			continue
		}
		gd := strings.TrimSpace(string(out))
		if gd == abs || gd == filepath.Join(abs, ".git") {
			found = gd
			break
		}
	}
	mc.gitDirs[repo] = found
	return found, nil
}

// git runs a git command on gitDir and returns its standard output.
func git(gitDir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// extractTree writes the go.mod and non-test Go files of treeish to dir,
// leaving out what a module zip leaves out (nested modules: a directory with
// its own go.mod; vendor/ trees) and what the generator never reads
// (testdata/ trees, anything not a regular file).
func extractTree(gitDir, treeish, dir string) error {
	cmd := exec.Command("git", "--git-dir="+gitDir, "archive", "--format=tar", treeish)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	files := map[string][]byte{}
	nested := map[string]bool{}
	tr := tar.NewReader(stdout)
	var readErr error
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(h.Name)
		if !filepath.IsLocal(name) {
			readErr = fmt.Errorf("archive entry %q is outside the tree", h.Name)
			break
		}
		base := path.Base(name)
		if base == "go.mod" && name != "go.mod" {
			nested[path.Dir(name)] = true
		}
		if base != "go.mod" && (!strings.HasSuffix(base, ".go") || strings.HasSuffix(base, "_test.go")) {
			continue
		}
		if h.Size > maxGitFile {
			readErr = fmt.Errorf("%s is %d bytes, over %d", name, h.Size, maxGitFile)
			break
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxGitFile+1))
		if err != nil {
			readErr = err
			break
		}
		files[name] = data
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if readErr != nil {
		return readErr
	}
	for name, data := range files {
		if excluded(name, nested) {
			continue
		}
		out := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// excluded reports a file a module zip of the tree would not hold.
func excluded(name string, nested map[string]bool) bool {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if nested[d] {
			return true
		}
		if b := path.Base(d); b == "vendor" || b == "testdata" {
			return true
		}
	}
	return false
}
