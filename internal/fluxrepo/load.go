package fluxrepo

import (
	"fmt"
	"os"
	"path/filepath"
)

// Load builds the environment o.Path of o.Repo and every Kustomization it
// declares, transitively. Input errors (verify.InputError, exit 2): a missing
// repository or path, no kustomization file at the root, a kustomize build
// error, a spec.path that escapes the repository or does not exist — each
// naming the Kustomization and path. Paths that cannot be built for other
// reasons (another source, a variable in spec.path, a remote base) are
// recorded in Kustomization.Note and Env.Notes.
//
// The layers: input.go holds the options to the input rules before the
// first read, walk.go walks from the root to the Kustomizations its builds
// declare, build.go builds one directory as kustomize-controller does.
func Load(o Options) (*Env, error) {
	return load(o, false)
}

// LoadInPlace is Load for a repository directory o.Repo that is already a
// private tree the caller wrote for this one load (internal/gitrev writes
// a commit's tree from Git's object store): instead of copying it, Load
// prepares it in place by the copy's rules — what source-controller's
// artifact leaves out (a symlink, a file the ignore rules exclude, a file
// over MaxFileBytes) is removed with the same note, a YAML alias bomb is
// emptied and refused by the build that reads it — and builds in it,
// writing into it (generated kustomization files, the holes left out).
// So the tree is written once, not twice. The caller removes o.Repo
// after LoadInPlace returns and reads nothing from it (it is changed). A
// directory holding .git (a checkout) is refused: never the user's.
func LoadInPlace(o Options) (*Env, error) {
	return load(o, true)
}

func load(o Options, inPlace bool) (*Env, error) {
	o = o.withDefaults()
	repo, root, err := checkInput(o)
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "fluxrepo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	// The copy, and beside it (never inside: a build or a pathPattern
	// would see them) the ExternalArtifacts staged from it. In place, the
	// caller's tree is the copy.
	tmp := filepath.Join(base, "repo")
	var pc *pooledCopy
	switch {
	case inPlace:
		tmp = ""
	case o.Copies != nil && copyLinks(o):
		// A copy kept (Options.Copies), given back restored once the
		// builds ahead are done (deferred before them: run after).
		if pc, err = o.Copies.take(repo, o.MaxFileBytes); err != nil {
			return nil, err
		}
		defer o.Copies.give(pc)
		tmp = pc.dir
	default:
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return nil, err
		}
	}
	l, err := newLoader(o, repo, tmp, pc)
	if err != nil {
		return nil, err
	}
	l.workspace = filepath.Join(base, "artifacts")
	defer l.ahead.forget() // before the copy is removed
	return l.env, l.run(root)
}

// upstreamBuildOnly makes every build use fluxkustomize.Build (tests).
var upstreamBuildOnly = false

type loader struct {
	env *Env
	tmp string
	// copyNotes are what the copy left out: the files a build error may be
	// explained by (the env's notes also hold later findings).
	copyNotes []string
	// bombs are the copy's YAML alias bombs (kept out, an empty file in
	// their place): the refusal of a build that reads one.
	bombs map[string]error
	// big are the files left out of the copy for their size.
	big  map[string]bool
	seen map[string]bool
	// plainSchema: no kustomization of the repository sets openapi:, so
	// every build sees kustomize's built-in schema (see build).
	plainSchema bool
	// sourceKey is the root's source (Kind/namespace/name): the one whose
	// artifact is this repository.
	sourceKey string
	// workspace holds the ExternalArtifacts staged; stagedDirs them by
	// directory.
	workspace  string
	stagedDirs map[string]*staged
	// cache holds the copy's files across builds (fscache.go).
	cache *fsCache
	// ahead builds the walk's Kustomizations concurrently (ahead.go);
	// nil: one by one.
	ahead *ahead
}

// copyLinks says whether a load's copy links the repository's files
// (copyRepoFiles): not when the upstream build writes its generated
// kustomization.yaml into the copy in place (buildCopy).
func copyLinks(o Options) bool { return !upstreamBuildOnly && !o.UpstreamBuild }

// newLoader copies repo into the private directory tmp, indexes the copy
// and returns the loader that builds it. tmp "": repo is prepared in
// place and is the copy (LoadInPlace). pc: tmp is a copy kept
// (Options.Copies), made here and recorded unless it is ready.
func newLoader(o Options, repo, tmp string, pc *pooledCopy) (*loader, error) {
	dst := tmp
	if tmp == "" {
		tmp = repo
	}
	// kustomize resolves symlinks in the paths it reads (a symlinked
	// $TMPDIR, macOS's /var): the files a build read are recorded relative
	// to the resolved copy.
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	copied := []copiedFile{}
	if dst != "" {
		dst = tmp
	}
	var notes []string
	var bombs map[string]error
	var big map[string]bool
	if pc != nil && pc.ready {
		notes, bombs, big, copied = pc.loaded()
	} else {
		linked := map[string]bool{}
		var err error
		notes, bombs, big, err = copyRepoFiles(repo, dst, o.MaxFileBytes, copyLinks(o), func(rel string, b []byte, l bool) {
			copied = append(copied, copiedFile{rel, b})
			if l {
				linked[rel] = true
			}
		})
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", repo, err)
		}
		if pc != nil {
			// Recorded before anything changes the copy.
			if err := pc.made(notes, bombs, big, copied, linked); err != nil {
				return nil, fmt.Errorf("copy %s: %w", repo, err)
			}
			notes, bombs, big, copied = pc.loaded()
		}
	}
	// The index of the copy, from the bytes the copy wrote (not read again).
	e := &Env{Options: o, Repo: repo, Data: map[string]*Data{}, Notes: notes, index: &fileIndex{root: tmp, copied: copied}}
	if pc != nil && pc.index != nil {
		// A copy kept: its index, read-only once loaded, is the one a
		// load of the same bytes makes.
		e.index = pc.index
	}
	e.index.load() // before the generator writes anything
	if pc != nil {
		pc.index = e.index
	}
	l := &loader{env: e, tmp: tmp, copyNotes: notes, bombs: bombs, big: big, seen: map[string]bool{}, stagedDirs: map[string]*staged{}, plainSchema: !upstreamBuildOnly && !o.UpstreamBuild && !SetsOpenAPI(tmp)}
	if o.Holes {
		// After the index: locations are the committed files'.
		if err := l.leaveOutOffline(); err != nil {
			return nil, fmt.Errorf("copy %s: %w", repo, err)
		}
	}
	l.cache = newFSCache()
	l.cache.seed(tmp, copied)
	l.ahead = newAhead(l)
	return l, nil
}
