package fluxrepo

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resource"
)

// ahead builds the Kustomizations the walk has found, concurrently, ahead
// of their turn; the walk takes the results in its own order (buildIn), so
// what is ingested, and in which order, is what the sequential walk
// ingests.
//
// Why this is safe:
//   - A build ahead reads the copy only through the shared fsCache and a
//     filesystem of its own (buildFS: the generated kustomization file in
//     memory, recordingFS: the files it read); nothing is written.
//   - The copy changes only when a build fails (buildRepaired leaves the
//     breaking entry out on disk, builds again, restores it). Every failed
//     build drains the builds ahead first (buildIn), so none runs while the
//     copy holds a repair; the results drained were built from the copy as
//     committed, as the sequential walk would have built them.
//   - kustomize's OpenAPI schema is a process global: builds run ahead only
//     when every build sees the built-in schema (loader.plainSchema, no
//     kustomization sets openapi:), which is initialised once under
//     kyaml's lock and then only read. fluxkustomize.Build resets it per
//     build (under its own mutex, as kustomize-controller serialises its
//     builds): with it (Options.UpstreamBuild, a kustomization setting
//     openapi:) the walk stays sequential.
//   - Staged ExternalArtifacts are built in turn (their directories are
//     written by the generator stage), never ahead.
type ahead struct {
	l       *loader
	workers int

	mu      sync.Mutex
	pending []*prebuilt // not started, in the walk's order
	running int
	idle    *sync.Cond // running reached 0 with nothing pending

	// byDir: the builds ahead not yet taken, by directory (relative).
	// Only the walk's goroutine reads or writes it.
	byDir map[string][]*prebuilt
}

// noAhead makes the walk build one by one (tests).
var noAhead = false

// prebuilt is one build ahead.
type prebuilt struct {
	dir   string
	obj   map[string]any
	taken bool // started (by a worker or the walk)
	done  chan struct{}
	res   []*resource.Resource
	files []string
	err   error
	// k is the Kustomization submitted; read, what its substitution read
	// then (Env.substituteData): a worker substitutes the objects the walk
	// will ingest (presubstitute) before it hands the build over.
	k    *Kustomization
	read []*Data
}

// newAhead returns the builds ahead of l, or nil when they would not be
// safe (see ahead) or not faster (one processor).
func newAhead(l *loader) *ahead {
	n := runtime.GOMAXPROCS(0)
	if n < 2 || noAhead || !l.plainSchema || upstreamBuildOnly || l.env.Options.UpstreamBuild {
		return nil
	}
	a := &ahead{l: l, workers: n, byDir: map[string][]*prebuilt{}}
	a.idle = sync.NewCond(&a.mu)
	return a
}

// submit starts building ahead the Kustomizations of queue that the walk
// will build in this repository's copy (the checks of buildChild,
// specPath and buildPath that need no build).
func (a *ahead) submit(queue []*Kustomization, sourceKey string) {
	if a == nil {
		return
	}
	for _, k := range queue {
		if k.Built || !a.l.ownSource(k, sourceKey) || strings.Contains(k.Spec.Path, "${") {
			continue
		}
		dir := cleanPath(strings.TrimLeft(k.Spec.Path, "/"))
		if !isLocal(dir) && dir != "." {
			continue
		}
		if fi, err := os.Stat(filepath.Join(a.l.tmp, filepath.FromSlash(dir))); err != nil || !fi.IsDir() {
			continue
		}
		obj, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(k.Kustomization)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(a.byDir[dir], func(p *prebuilt) bool { return reflect.DeepEqual(p.obj, obj) }) {
			continue
		}
		p := &prebuilt{dir: dir, obj: obj, done: make(chan struct{}), k: k}
		if k.Substitutes() {
			p.read = a.l.env.substituteData(k)
		}
		a.byDir[dir] = append(a.byDir[dir], p)
		a.mu.Lock()
		a.pending = append(a.pending, p)
		if a.running < a.workers {
			a.running++
			go a.work()
		}
		a.mu.Unlock()
	}
}

// work builds the pending builds, first come first built, until none is left.
func (a *ahead) work() {
	for {
		a.mu.Lock()
		if len(a.pending) == 0 {
			a.running--
			if a.running == 0 {
				a.idle.Broadcast()
			}
			a.mu.Unlock()
			return
		}
		p := a.pending[0]
		a.pending = a.pending[1:]
		p.taken = true
		a.mu.Unlock()
		workerBuilds.Add(1)
		a.run(p, true)
	}
}

// workerBuilds counts the builds the workers ran (tests).
var workerBuilds atomic.Int64

// run builds p; on a worker, it also substitutes what the walk will
// ingest of it (on the walk's goroutine that would gain nothing).
func (a *ahead) run(p *prebuilt, worker bool) {
	defer close(p.done)
	p.res, p.files, p.err = a.l.buildCopy(a.l.tmp, p.dir, p.obj, true)
	// Only with every substituteFrom object rendered at submit: those stay
	// as they are (ingestData keeps the first), so the walk reads the
	// same; one not rendered yet may be by then (a sibling walked later),
	// and the answer would be computed again.
	if !worker || p.err != nil || p.read == nil || slices.Contains(p.read, nil) {
		return
	}
	for _, r := range p.res {
		if ingestSubstitutes(r) {
			a.l.env.presubstitute(p.k, r, p.read)
		}
	}
}

// take returns the build ahead of dir with obj, waiting for it (or
// building it now if no worker has started it); ok is false when there is
// none.
func (a *ahead) take(dir string, obj map[string]any) (res []*resource.Resource, files []string, err error, ok bool) {
	if a == nil {
		return nil, nil, nil, false
	}
	i := slices.IndexFunc(a.byDir[dir], func(p *prebuilt) bool { return reflect.DeepEqual(p.obj, obj) })
	if i < 0 {
		return nil, nil, nil, false
	}
	p := a.byDir[dir][i]
	a.byDir[dir] = slices.Delete(a.byDir[dir], i, i+1)
	if len(a.byDir[dir]) == 0 {
		delete(a.byDir, dir)
	}
	a.mu.Lock()
	mine := !p.taken
	if mine {
		p.taken = true
		a.pending = slices.DeleteFunc(a.pending, func(q *prebuilt) bool { return q == p })
	}
	a.mu.Unlock()
	if mine {
		a.run(p, false)
	} else {
		<-p.done
	}
	return p.res, p.files, p.err, true
}

// drain waits until no build ahead runs or is pending (before the copy
// changes: a repair). The results stay to be taken.
func (a *ahead) drain() {
	if a == nil {
		return
	}
	a.mu.Lock()
	for a.running > 0 || len(a.pending) > 0 {
		if a.running == 0 {
			// Nothing would run them: run them here.
			ps := a.pending
			a.pending = nil
			for _, p := range ps {
				p.taken = true
			}
			a.mu.Unlock()
			for _, p := range ps {
				a.run(p, false)
			}
			a.mu.Lock()
			continue
		}
		a.idle.Wait()
	}
	a.mu.Unlock()
}

// forget drops the builds ahead not taken (after draining them): the
// copy is about to change for good, or the walk is over.
func (a *ahead) forget() {
	if a == nil {
		return
	}
	a.drain()
	clear(a.byDir)
}
