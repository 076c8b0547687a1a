package rootsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/reconcile"
	"github.com/homelab-ops/bootstrap/internal/serve"
)

// Annotations this tool records on a GitRepository that is on a temporary
// source, and kustomize-controller's own switch that makes it leave the
// object alone while it is.
const (
	AnnotationPrefix   = "bootstrap.homelab-ops.github.io/"
	AnnSource          = AnnotationPrefix + "source" // "temporary"
	AnnTemporaryURL    = serve.AnnTemporaryURL
	AnnTemporaryBranch = AnnotationPrefix + "temporary-branch"
	AnnTemporarySecret = AnnotationPrefix + "temporary-secret"
	AnnTemporarySince  = AnnotationPrefix + "temporary-since"
	AnnDeclaredURL     = AnnotationPrefix + "declared-url"
	// AnnDeclaredRef records the whole spec.ref git declares, as JSON
	// (source-controller's GitRepositoryRef); AnnDeclaredBranch is what
	// older versions recorded instead, read when AnnDeclaredRef is absent.
	AnnDeclaredRef    = AnnotationPrefix + "declared-ref"
	AnnDeclaredBranch = AnnotationPrefix + "declared-branch"
	AnnDeclaredSecret = AnnotationPrefix + "declared-secret"
	SourceTemporary   = "temporary"

	// ReconcileAnnotation "disabled" makes kustomize-controller skip the
	// object on apply and on prune.
	ReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
	ReconcileDisabled   = "disabled"
)

// Temporary is a temporary Git source.
type Temporary struct {
	URL    string
	Branch string // "" keeps the declared ref
	Secret string // "" means no secretRef (an anonymous mirror)
	Since  time.Time
}

// Declared is what git declares for the GitRepository: its URL, its whole
// spec.ref (nil: none, source-controller's default branch) and its
// secretRef.
type Declared struct {
	URL    string
	Ref    *sourcev1.GitRepositoryRef
	Secret string
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	return unstructured.NestedString(obj, fields...)
}

// DeclaredOf reads the declared URL, ref and secret of a GitRepository
// object as rendered from git (a spec.ref that does not read as the API
// type is left out: the API server refuses it on apply).
func DeclaredOf(src *unstructured.Unstructured) Declared {
	u, _, _ := unstructured.NestedString(src.Object, "spec", "url")
	ref, _ := serve.RefOf(src)
	s, _, _ := unstructured.NestedString(src.Object, "spec", "secretRef", "name")
	return Declared{URL: u, Ref: ref, Secret: s}
}

// declaredRefOf reads the recorded declared ref: AnnDeclaredRef, else the
// branch an older version recorded in AnnDeclaredBranch.
func declaredRefOf(a map[string]string) *sourcev1.GitRepositoryRef {
	if j := a[AnnDeclaredRef]; j != "" {
		var ref sourcev1.GitRepositoryRef
		if err := json.Unmarshal([]byte(j), &ref); err == nil && ref != (sourcev1.GitRepositoryRef{}) {
			return &ref
		}
	}
	if b := a[AnnDeclaredBranch]; b != "" {
		return &sourcev1.GitRepositoryRef{Branch: b}
	}
	return nil
}

// TemporaryOf reads the temporary-source record of a live GitRepository;
// nil when it is not on a temporary source. declared is what git declared
// when the override was made.
func TemporaryOf(live *unstructured.Unstructured) (*Temporary, Declared) {
	a := live.GetAnnotations()
	if a[AnnSource] != SourceTemporary {
		return nil, Declared{}
	}
	t := &Temporary{URL: a[AnnTemporaryURL], Branch: a[AnnTemporaryBranch], Secret: a[AnnTemporarySecret]}
	t.Since, _ = time.Parse(time.RFC3339, a[AnnTemporarySince])
	return t, Declared{URL: a[AnnDeclaredURL], Ref: declaredRefOf(a), Secret: a[AnnDeclaredSecret]}
}

// Same says whether two temporary sources point at the same place.
func (t *Temporary) Same(o *Temporary) bool {
	return t != nil && o != nil && t.URL == o.URL && t.Branch == o.Branch && t.Secret == o.Secret
}

// Override points src (the GitRepository from the render) at the temporary
// source, disables kustomize-controller's reconciliation of it, and records
// the temporary source and what git declares.
func Override(src *unstructured.Unstructured, t *Temporary) error {
	d := DeclaredOf(src)
	if err := unstructured.SetNestedField(src.Object, t.URL, "spec", "url"); err != nil {
		return err
	}
	if t.Branch != "" {
		// A declared tag, semver or commit would win over a branch: replace the ref.
		if err := unstructured.SetNestedMap(src.Object, map[string]any{"branch": t.Branch}, "spec", "ref"); err != nil {
			return err
		}
	}
	if t.Secret != "" {
		if err := unstructured.SetNestedMap(src.Object, map[string]any{"name": t.Secret}, "spec", "secretRef"); err != nil {
			return err
		}
	} else {
		unstructured.RemoveNestedField(src.Object, "spec", "secretRef")
	}
	a := src.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[ReconcileAnnotation] = ReconcileDisabled
	a[AnnSource] = SourceTemporary
	a[AnnTemporaryURL] = t.URL
	a[AnnTemporarySince] = t.Since.UTC().Format(time.RFC3339)
	a[AnnDeclaredURL] = d.URL
	set := func(k, v string) {
		if v != "" {
			a[k] = v
		}
	}
	set(AnnTemporaryBranch, t.Branch)
	set(AnnTemporarySecret, t.Secret)
	if d.Ref != nil {
		j, err := json.Marshal(d.Ref)
		if err != nil {
			return err
		}
		a[AnnDeclaredRef] = string(j)
	}
	delete(a, AnnDeclaredBranch) // the whole ref is in AnnDeclaredRef
	set(AnnDeclaredSecret, d.Secret)
	src.SetAnnotations(a)
	return nil
}

// LiveSource reads the live GitRepository as unstructured; nil when absent.
func LiveSource(ctx context.Context, c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind))
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		if e := notInstalled(err); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("read GitRepository %s/%s: %w", ns, name, err)
	}
	return live, nil
}

// ErrFluxNotInstalled is what a request for a Flux object gets from a
// cluster that does not serve Flux's APIs.
var ErrFluxNotInstalled = errors.New("Flux is not installed in this cluster: run `bootstrap controllers`")

// notInstalled turns the API server's "no match for kind" (the discovery
// error of a cluster without Flux's CRDs) into ErrFluxNotInstalled, naming
// the API that is missing; nil for any other error.
func notInstalled(err error) error {
	if apimeta.IsNoMatchError(err) {
		return fmt.Errorf("%w first (the API %s is not served)", ErrFluxNotInstalled, sourcev1.GroupVersion)
	}
	return nil
}

// RequestReconcile asks obj to reconcile now (internal/reconcile).
func RequestReconcile(ctx context.Context, c client.Client, obj client.Object) error {
	_, err := RequestReconcileToken(ctx, c, obj)
	return err
}

// RequestReconcileToken is RequestReconcile returning the token the
// controller copies to status.lastHandledReconcileAt once it handled it.
// An object that does not exist (yet) is not an error.
func RequestReconcileToken(ctx context.Context, c client.Client, obj client.Object) (string, error) {
	token := reconcile.Token()
	if err := reconcile.Request(ctx, c, obj, token, reconcile.DefaultBackoff()); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("request reconcile of %s: %w", obj.GetName(), err)
	}
	return token, nil
}

// ValidateSync checks sync's flags before anything is read or requested:
// the root Kustomization's namespace and the temporary source's URL and
// Secret name (--root and --timeout check themselves: internal/input).
func ValidateSync(o RunOptions, url, secret string) error {
	errs := []error{
		input.ValidNamespace("--namespace", o.Build.Namespace),
		input.ValidOptionalName("--source-secret", secret, "Secret with the temporary source's credentials"),
	}
	if url != "" {
		errs = append(errs, input.ValidGitURL("--source-url", url))
	}
	return errors.Join(errs...)
}
