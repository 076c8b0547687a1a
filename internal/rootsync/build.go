// Package rootsync is step 3: build an environment's cluster root
// (clusters/<env>) in-process with kustomize, as kustomize-controller would,
// gate it, server-side apply it with step 1's machinery, optionally pointing
// the GitRepository at a temporary source for a cold bring-up, and prove
// the root reconciled at the source's artifact revision. internal/cutover
// moves a temporarily-sourced cluster to its final source.
package rootsync

import (
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is this package's phase name in reports.
const PhaseName = "sync"

// Options select what to build.
type Options struct {
	// Repo is the GitOps repository's root directory.
	Repo string
	// Path is the root kustomization inside Repo, e.g. clusters/dev.
	Path string
	// Namespace and RootName name the root Kustomization (flux-system/flux-system).
	Namespace, RootName string
	// Sync declares the root on the command line (--source-kind,
	// --source-url, --source-ref) for a repository that renders none and
	// whose FluxInstance declares none (nil: not declared).
	Sync *fluxrepo.Sync
	// FluxInstance is the file whose FluxInstance declares the root
	// (--flux-instance; "": any whose spec.sync.path is Path).
	FluxInstance string
	// AdoptRoot: Namespace and RootName are defaults, not chosen; the one
	// self-applying root Kustomization Path renders is taken as the root
	// when it renders none of that name (fluxrepo.Options.AdoptRoot), and
	// the Render's Options name it.
	AdoptRoot bool
}

// Render is the built root: its objects, the Flux Kustomizations among
// them, the root and its GitRepository, and the environment's repository
// model they were taken from.
type Render struct {
	Options Options
	Objects []*unstructured.Unstructured
	// Kustomizations are those the root directory renders (typed).
	Kustomizations []*kustomizev1.Kustomization
	// Root is nil when the render lacks it (a before-gate fails).
	Root *kustomizev1.Kustomization
	// Source is the root's GitRepository object in the render (nil when absent).
	Source *unstructured.Unstructured
	// Env is the one repository model (internal/fluxrepo): every Kustomization
	// the environment declares, transitively, with where each came from.
	Env *fluxrepo.Env
	// Declared is set when the repository does not render the root: a
	// FluxInstance's spec.sync declares it, and Objects begin with the
	// source and the root Kustomization as the Flux Operator creates them.
	Declared *fluxrepo.Origin
	// Inputs are what the sync writes before the root (PrepareInputs;
	// nil: none prepared).
	Inputs *Inputs
}

// Build builds the environment's root directory the way kustomize-controller
// does, through the one repository model (fluxrepo.Load: a private copy as
// source-controller archives it, the controller's generator, a build
// confined to the repository with no plugins and no remote bases; a root
// directory without a kustomization file is generated, as the controller
// generates it). A missing repository or path, or a root that does not
// build, is an input error; symlinks are left out of the copy, never
// followed.
func Build(o Options) (*Render, error) {
	// Sync applies the root: a Kustomization below it whose path does not
	// build is the controller's to fail (and the offline check's to name).
	env, err := fluxrepo.Load(fluxrepo.Options{Repo: o.Repo, Path: o.Path, Namespace: o.Namespace, RootName: o.RootName, Sync: o.Sync, FluxInstance: o.FluxInstance, KeepGoing: true, AdoptRoot: o.AdoptRoot})
	if err != nil {
		return nil, err
	}
	if env.Origin.Adopted != "" {
		o.Namespace, o.RootName = env.Options.Namespace, env.Options.RootName
	}

	objs, err := env.RootObjects()
	if err != nil {
		return nil, verify.InputErrorf("%s: %w", o.Path, err)
	}
	r := &Render{Options: o, Objects: objs, Env: env}
	// env.Root is the declared root as the FluxInstance's patches leave it
	// (fluxrepo declaredRoot): the gates judge what is created.
	if (env.Origin.Layout == fluxrepo.LayoutFluxInstance || env.Origin.Layout == fluxrepo.LayoutCommandLine) && env.Root != nil {
		// Sync creates what the operator would where none runs (and,
		// where one does, applies nothing: sync.flux-operator); a root
		// declared on the command line is created the same way.
		declared, err := declaredObjects(env)
		if err != nil {
			return nil, err
		}
		r.Objects = append(declared, r.Objects...)
		origin := env.Origin
		r.Declared = &origin
		objs = r.Objects
	}
	for _, u := range objs {
		if fluxobj.IsKustomization(u.GetAPIVersion(), u.GetKind()) {
			// The model holds it typed, namespace defaulted.
			k := env.Kustomization(fluxobj.NamespaceOr(u.GetNamespace(), o.Namespace), u.GetName())
			if k == nil && r.Declared != nil && u.GetNamespace() == env.Root.Namespace && u.GetName() == env.Root.Name {
				k = env.Root
			}
			if k == nil && strings.Contains(u.GetName(), "${") {
				continue // the model holds it by its substituted name
			}
			if k == nil {
				return nil, fmt.Errorf("%s: Kustomization %s/%s is not in the repository model", o.Path, u.GetNamespace(), u.GetName())
			}
			r.Kustomizations = append(r.Kustomizations, k.Kustomization)
		}
	}
	if env.Root != nil {
		r.Root = env.Root.Kustomization
		ref := fluxobj.KustomizationSource(r.Root)
		for _, u := range objs {
			if u.GetKind() == ref.Kind && u.GetName() == ref.Name && fluxobj.NamespaceOr(u.GetNamespace(), o.Namespace) == ref.Namespace &&
				fluxobj.IsSource(u.GetAPIVersion(), u.GetKind()) {
				r.Source = u
			}
		}
	}
	return r, nil
}

// declaredObjects are the source and the root Kustomization of a declared
// sync, as the Flux Operator creates them: with a FluxInstance's
// spec.kustomize.patches applied (fluxrepo.Env.DeclaredObjects).
func declaredObjects(env *fluxrepo.Env) ([]*unstructured.Unstructured, error) {
	return env.DeclaredObjects()
}

// where names the file and line declaring an object of the root's render,
// for messages.
func (r *Render) where(kind, namespace, name string) string {
	if d := r.Declared; d != nil && r.Root != nil && namespace == r.Root.Namespace && name == r.Root.Name &&
		(kind == kustomizev1.KustomizationKind || kind == d.Sync.Kind) {
		if d.Layout == fluxrepo.LayoutCommandLine {
			return "(declared on the command line: --source-kind, --source-url, --source-ref)"
		}
		return fmt.Sprintf("%s (the FluxInstance spec.sync; applied as the Flux Operator creates it)", d.Location)
	}
	return r.Env.Locate(r.Env.RootFiles, kind, namespace, name).String()
}
