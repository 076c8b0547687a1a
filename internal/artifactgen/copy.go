package artifactgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/fluxcd/pkg/tar"
	swapi "github.com/fluxcd/source-watcher/api/v2/v1beta1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// op is one copy operation being applied: its parsed ends and open roots.
type op struct {
	swapi.CopyOperation
	alias    string
	src      *os.Root
	stage    *os.Root
	stageDir string
}

// apply is source-watcher's applyCopyOperation: cp-like semantics chosen
// by whether From is a glob, then by what the matches are.
func (a *Artifact) apply(ctx context.Context, c swapi.CopyOperation, sources map[string]string) error {
	alias, pattern, err := parseFrom(c.From)
	if err != nil {
		return fmt.Errorf("invalid copy source '%s': %w", c.From, err)
	}
	dest, err := parseTo(c.To)
	if err != nil {
		return fmt.Errorf("invalid copy destination '%s': %w", c.To, err)
	}
	srcDir, ok := sources[alias]
	if !ok {
		return fmt.Errorf("source alias '%s' not found", alias)
	}
	for _, p := range c.Exclude {
		if _, err := doublestar.Match(p, "."); err != nil {
			return fmt.Errorf("invalid exclude pattern '%s'", p)
		}
	}
	src, err := os.OpenRoot(srcDir)
	if err != nil {
		return fmt.Errorf("failed to open source root '%s': %w", srcDir, err)
	}
	defer src.Close()
	stage, err := os.OpenRoot(a.Dir)
	if err != nil {
		return fmt.Errorf("failed to open staging root '%s': %w", a.Dir, err)
	}
	defer stage.Close()
	o := &op{CopyOperation: c, alias: alias, src: src, stage: stage, stageDir: a.Dir}
	if !isGlob(pattern) {
		return a.single(ctx, o, filepath.Clean(pattern), dest, strings.HasSuffix(c.To, "/"))
	}
	var matches []string
	if c.Strategy == swapi.ExtractStrategy {
		matches, err = doublestar.Glob(src.FS(), pattern) // ** recurses
	} else {
		matches, err = fs.Glob(src.FS(), pattern)
	}
	if err != nil {
		return fmt.Errorf("invalid glob pattern '%s': %w", pattern, err)
	}
	if len(matches) == 0 {
		return fmt.Errorf("no files match pattern '%s' in source '%s'", pattern, alias)
	}
	base := selectionRoot(pattern)
	kept := matches[:0]
	for _, m := range matches {
		// "." (doublestar's match of "**") would copy the whole source
		// past the per-file strategies.
		if m != "." && m != ".." && !excluded(m, base, c.Exclude) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("all files matching pattern '%s' in source '%s' were excluded", pattern, alias)
	}
	for _, m := range kept {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.Strategy == swapi.ExtractStrategy {
			if !isTarball(m) {
				continue // a glob's other files are skipped
			}
			if err := a.extract(o, m, dest); err != nil {
				return fmt.Errorf("failed to extract tarball '%s' to '%s': %w", m, dest, err)
			}
			continue
		}
		to := globDestination(pattern, m, dest)
		if err := a.copyPath(ctx, o, m, to, base); err != nil {
			return fmt.Errorf("failed to copy file '%s' to '%s': %w", m, to, err)
		}
	}
	return nil
}

// single is applySingleSourceCopy: a path, not a glob. A directory is
// copied as a subdirectory of dest (cp -r dir dest → dest/dir); a file to
// dest, or into it when dest ends in "/" or is a directory already.
func (a *Artifact) single(ctx context.Context, o *op, path, dest string, destIsDir bool) error {
	info, err := o.src.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("source '%s' does not exist", path)
	}
	if err != nil {
		return fmt.Errorf("failed to stat source '%s': %w", path, err)
	}
	if info.IsDir() {
		if o.Strategy == swapi.ExtractStrategy {
			return fmt.Errorf("extract strategy is not supported for directories, got '%s'", path)
		}
		return a.copyPath(ctx, o, path, filepath.Join(dest, filepath.Base(path)), path)
	}
	if excluded(path, ".", o.Exclude) {
		return nil
	}
	if o.Strategy == swapi.ExtractStrategy {
		if !isTarball(path) {
			return fmt.Errorf("extract strategy requires tarball file (.tar.gz or .tgz), got '%s'", path)
		}
		return a.extract(o, path, dest)
	}
	to := dest
	if st, err := o.stage.Stat(dest); destIsDir || (err == nil && st.IsDir()) {
		to = filepath.Join(dest, filepath.Base(path))
	}
	return a.copyPath(ctx, o, path, to, ".")
}

// copyPath is copyFileWithRoots: a directory is copied whole (its excludes
// matched, never merged), a file merged into an existing one under the
// Merge strategy, else copied over it.
func (a *Artifact) copyPath(ctx context.Context, o *op, path, to, base string) error {
	info, err := o.src.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() {
		return fs.WalkDir(o.src.FS(), path, func(p string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(path, p)
			if err != nil {
				return err
			}
			if rel == "." {
				return o.stage.MkdirAll(to, 0o755)
			}
			if excluded(p, base, o.Exclude) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return o.stage.MkdirAll(filepath.Join(to, rel), 0o755)
			}
			return a.copyFile(o, p, filepath.Join(to, rel))
		})
	}
	if _, err := o.stage.Stat(to); err == nil && o.Strategy == swapi.MergeStrategy {
		return a.merge(o, path, to)
	}
	return a.copyFile(o, path, to)
}

// copyFile copies one regular file with its mode, replacing what was there.
func (a *Artifact) copyFile(o *op, path, to string) error {
	if dir := filepath.Dir(to); dir != "." && dir != "" {
		if err := o.stage.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("failed to create destination directory: %w", err)
		}
	}
	in, err := o.src.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := o.stage.Create(to)
	if err != nil {
		return err
	}
	defer out.Close()
	if _, err := out.ReadFrom(in); err != nil {
		return err
	}
	info, err := in.Stat()
	if err != nil {
		return err
	}
	a.Origins[filepath.ToSlash(to)] = []Origin{{Alias: o.alias, Path: filepath.ToSlash(path)}}
	return out.Chmod(info.Mode())
}

// merge is mergeFileWithRoots: both files read as multi-document YAML
// (each file's documents merged into one map), the source's map merged
// over the destination's as Helm merges values, the result written back.
func (a *Artifact) merge(o *op, path, to string) error {
	src, err := loadYAML(o.src, path)
	if err != nil {
		return err
	}
	dst, err := loadYAML(o.stage, to)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(mergeMaps(dst, src))
	if err != nil {
		return fmt.Errorf("failed to merged YAML: %w", err)
	}
	key := filepath.ToSlash(to)
	a.Origins[key] = append(a.Origins[key], Origin{Alias: o.alias, Path: filepath.ToSlash(path)})
	return o.stage.WriteFile(to, b, 0o644)
}

// loadYAML reads every YAML document of path and merges them in order.
func loadYAML(root *os.Root, path string) (map[string]any, error) {
	f, err := root.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]any{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		raw, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("error reading YAML document: %w", err)
		}
		doc := map[string]any{}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("cannot unmarshal YAML document: %w", err)
		}
		out = mergeMaps(out, doc)
	}
}

// mergeMaps is Helm's values merge: maps merged recursively, anything
// else (lists included) replaced by the overlay's value.
func mergeMaps(base, overlay map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range overlay {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(bm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// extract untars a .tar.gz/.tgz of the source into dest with
// fluxcd/pkg/tar (traversal and symlinks checked, 100 MiB at most).
func (a *Artifact) extract(o *op, path, dest string) error {
	f, err := o.src.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open tarball %q: %w", path, err)
	}
	defer f.Close()
	full := filepath.Join(o.stageDir, dest)
	if err := os.MkdirAll(full, 0o755); err != nil {
		return fmt.Errorf("failed to create destination directory %q: %w", full, err)
	}
	if err := tar.Untar(f, full); err != nil {
		return fmt.Errorf("failed to extract tarball %q to %q: %w", path, full, err)
	}
	// Its files came from the tarball: that is their origin.
	return filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a.Dir, p)
		if _, ok := a.Origins[filepath.ToSlash(rel)]; !ok {
			a.Origins[filepath.ToSlash(rel)] = []Origin{{Alias: o.alias, Path: filepath.ToSlash(path)}}
		}
		return nil
	})
}

// isGlob: the path holds a glob metacharacter.
func isGlob(p string) bool { return strings.ContainsAny(p, "*?[]") }

// isTarball: .tar.gz or .tgz, any case (helm package, flux build artifact).
func isTarball(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tgz")
}

// globDestination is calculateGlobDestination: "dir/**" copies dir's
// contents (the prefix stripped), any other glob keeps the match's path.
func globDestination(pattern, match, dest string) string {
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		if rel, ok := strings.CutPrefix(match, prefix+"/"); ok {
			return filepath.Join(dest, rel)
		}
	}
	return filepath.Join(dest, match)
}

// selectionRoot is the literal prefix of pattern before its first glob
// segment ("." when it starts with one).
func selectionRoot(pattern string) string {
	var parts []string
	for _, p := range strings.Split(filepath.Clean(pattern), string(filepath.Separator)) {
		if isGlob(p) {
			break
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "."
	}
	return filepath.Join(parts...)
}

// excluded is shouldExcludePath: the patterns matched against the path in
// the source and against it relative to the selection root; a pattern
// without "/" also matches the file name at any depth.
func excluded(path, base string, patterns []string) bool {
	if matchAny(path, patterns) {
		return true
	}
	rel, ok := relativeTo(base, path)
	if !ok || rel == "." || rel == path {
		return false
	}
	return matchAny(rel, patterns)
}

func relativeTo(base, path string) (string, bool) {
	base, path = filepath.Clean(base), filepath.Clean(path)
	if base == "." || base == "" {
		return path, true
	}
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func matchAny(path string, patterns []string) bool {
	name := filepath.Base(path)
	for _, p := range patterns {
		// Validated in apply: MatchUnvalidated is safe.
		if doublestar.MatchUnvalidated(p, path) || (!strings.Contains(p, "/") && doublestar.MatchUnvalidated(p, name)) {
			return true
		}
	}
	return false
}
