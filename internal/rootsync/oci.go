package rootsync

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/secrets"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// An OCI root: the root Kustomization reads an OCIRepository (a
// FluxInstance's sync.kind OCIRepository, or a repository that renders its
// root so). Sync applies it from its declared URL and ref and proves it at
// the digest the registry serves for that ref: the OCIRepository Ready with
// an artifact whose revision is source-controller's `<tag>@<digest>` for
// what the registry serves now, and the root Kustomization Ready having
// applied that revision. --serve serves the work tree as an OCI artifact
// (OverrideOCI points the OCIRepository at it); --source-url names a Git
// source: refused for an OCI root.

// IsOCIRoot says the root's source in the render is an OCIRepository.
func IsOCIRoot(r *Render) bool {
	return r != nil && r.Source != nil && r.Source.GetKind() == sourcev1.OCIRepositoryKind
}

// ociRefuseTemporary refuses --source-url for an OCI root, before the
// first request: it names a Git source, and an OCIRepository reads a
// registry (--serve serves an OCI artifact).
func ociRefuseTemporary(r *Render, o RunOptions) error {
	if o.Source != nil {
		return RefuseOCITemporary(r, "--source-url")
	}
	return nil
}

// OCIRefOf is the rendered OCIRepository's declared spec.ref (nil: none).
func OCIRefOf(u *unstructured.Unstructured) (*sourcev1.OCIRepositoryRef, error) {
	o, err := ociOf(u)
	if err != nil {
		return nil, err
	}
	return o.Spec.Reference, nil
}

// RefuseOCITemporary is the input error for flag (--serve, --source-url)
// asking a temporary source of an OCI root; nil for a root that reads Git.
func RefuseOCITemporary(r *Render, flag string) error {
	if !IsOCIRoot(r) {
		return nil
	}
	return verify.InputErrorf("%s: the root %s/%s reads OCIRepository %s/%s (%s), and %s names a Git source: drop it; sync applies the OCIRepository from its declared registry (push the artifact there first: flux push artifact), or --serve serves this work tree as its artifact",
		flag, r.Root.Namespace, r.Root.Name, r.Source.GetNamespace(), r.Source.GetName(), ociDeclaredURL(r.Source), flag)
}

// ociSourceGate is sync.temporary-source for an OCI root: no temporary
// source; the declared registry and ref.
func ociSourceGate(r *Render) (verify.Check, error) {
	o, err := ociOf(r.Source)
	if err != nil {
		return verify.Check{}, err
	}
	return GateTemporary.Pass(fmt.Sprintf("OCIRepository %s/%s from the declared registry %s, %s", o.Namespace, o.Name, o.Spec.URL, ociRefString(o))), nil
}

func ociDeclaredURL(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "spec", "url")
	return s
}

// ociOf is the rendered OCIRepository, typed.
func ociOf(u *unstructured.Unstructured) (*sourcev1.OCIRepository, error) {
	var o sourcev1.OCIRepository
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		return nil, fmt.Errorf("OCIRepository %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &o, nil
}

// ociRefString names the ref source-controller pulls, in its precedence
// (v1.9.5 internal/controller/ocirepository_controller.go getArtifactRef:
// digest, then semver, then tag, else the tag "latest").
func ociRefString(o *sourcev1.OCIRepository) string {
	if ref := o.Spec.Reference; ref != nil {
		switch {
		case ref.Digest != "":
			return "digest " + ref.Digest
		case ref.SemVer != "":
			return "semver " + ref.SemVer
		case ref.Tag != "":
			return "tag " + ref.Tag
		}
	}
	return "tag " + name.DefaultTag
}

// OCISourceReady is the condition an OCIRepository is waited on (sync's
// source-ready gate and the cutover's probe and hand-back): Ready with an
// artifact, from wantURL, having handled the fetch asked for (token; ""
// when none was). failed is source-controller's own verdict on that fetch
// from wantURL (fluxobj.Failed once it handled the request: a missing tag,
// refused credentials), so the wait ends with its reason, not a timeout; a
// failure while the spec still names another URL is not that fetch's.
func OCISourceReady(o *sourcev1.OCIRepository, token, wantURL string) (ok, failed bool, desc string) {
	ok, desc = fluxobj.Ready(o)
	fetched := token == "" || o.Status.LastHandledReconcileAt == token
	if !fetched {
		desc += "; the fetch asked for is not handled yet"
	}
	if fetched && !ok && fluxobj.Failed(o) && o.Spec.URL == wantURL {
		return false, true, desc
	}
	return ok && fetched && o.Status.Artifact != nil && o.Spec.URL == wantURL, false, desc
}

// errOCIUnread is why this machine did not read the registry: the
// OCIRepository authenticates in a way only the controller can.
var errOCIUnread = errors.New("the registry was not read from this machine")

// RegistryRevision reads from the registry the revision source-controller
// makes for o's ref, in its format (v1.9.5 ocirepository_controller.go
// getRevision: `<tag>@<digest>` for a tag, the digest for a digest ref),
// through the same transport the controller builds (transport,
// getTLSConfig: certSecretRef's CA and client certificate, or insecure).
// A semver ref is the controller's choice among the tags: the tag it chose
// (artifactRev's, before the @) is read. The credentials are the
// controller's image pull Secrets (ociAuth); a cloud provider's workload
// identity and a proxy are the controller's alone: errOCIUnread.
func RegistryRevision(ctx context.Context, c client.Client, o *sourcev1.OCIRepository, artifactRev string) (string, error) {
	if o.Spec.ProxySecretRef != nil {
		return "", fmt.Errorf("%w: it reaches the registry through the proxy of Secret %s", errOCIUnread, o.Spec.ProxySecretRef.Name)
	}
	// parseRepository.
	if !strings.HasPrefix(o.Spec.URL, sourcev1.OCIRepositoryPrefix) {
		return "", fmt.Errorf("URL %q must be in format 'oci://<domain>/<org>/<repo>'", o.Spec.URL)
	}
	var nopts []name.Option
	if o.Spec.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(strings.TrimPrefix(o.Spec.URL, sourcev1.OCIRepositoryPrefix), nopts...)
	if err != nil {
		return "", err
	}
	auth, err := ociAuth(ctx, c, o, repo)
	if err != nil {
		return "", err
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	switch {
	case o.Spec.CertSecretRef != nil && o.Spec.CertSecretRef.Name != "":
		cfg, err := secrets.TLSConfigFromSecretRef(ctx, c, types.NamespacedName{Namespace: o.Namespace, Name: o.Spec.CertSecretRef.Name}, secrets.WithSystemCertPool())
		if err != nil {
			return "", err
		}
		tr.TLSClientConfig = cfg
	case o.Spec.Insecure:
		// The controller's one exception (getTLSConfig), mirrored.
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // as source-controller, for insecure: true
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuth(auth)}
	ref := o.Spec.Reference
	switch {
	case ref != nil && ref.Digest != "":
		d := repo.Digest(ref.Digest)
		if _, err := remote.Head(d, ropts...); err != nil {
			return "", err
		}
		return d.DigestStr(), nil
	case ref != nil && ref.SemVer != "":
		tag, _, ok := strings.Cut(artifactRev, "@")
		if !ok {
			return "", fmt.Errorf("artifact revision %q names no tag", artifactRev)
		}
		return tagRevision(repo.Tag(tag), ropts)
	case ref != nil && ref.Tag != "":
		return tagRevision(repo.Tag(ref.Tag), ropts)
	}
	return tagRevision(repo.Tag(name.DefaultTag), ropts)
}

// tagRevision is getRevision for a tag: the manifest digest from a HEAD,
// or a GET where the registry answers no HEAD.
func tagRevision(t name.Tag, ropts []remote.Option) (string, error) {
	desc, err := remote.Head(t, ropts...)
	if err == nil {
		return fmt.Sprintf("%s@%s", t.TagStr(), desc.Digest), nil
	}
	rdesc, err := remote.Get(t, ropts...)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s@%s", t.TagStr(), rdesc.Digest), nil
}

// afterOCI is After for an OCI root: the OCIRepository Ready with an
// artifact at the revision the registry serves for its ref, then the root
// Kustomization Ready having applied it.
//
// With --serve (servedRev, "" otherwise) the artifact must also be the one
// this machine serves: the revision built from the work tree's commit.
func afterOCI(ctx context.Context, cl *apply.Cluster, r *Render, timeout time.Duration, progress apply.Progress, servedRev string) []verify.Check {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sc, rc := GateSourceReady.New(), GateRootApplied.New()
	declared, err := ociOf(r.Source)
	if err != nil {
		sc.Verdict, sc.Message = verify.Fail, err.Error()
		rc.Verdict, rc.Message = verify.Skip, "no artifact to compare with"
		return []verify.Check{sc, rc}
	}
	ns, nm, wantURL := declared.Namespace, declared.Name, declared.Spec.URL
	id := fmt.Sprintf("OCIRepository %s/%s", ns, nm)
	progress(fmt.Sprintf("waiting for %s to be Ready with an artifact from %s, %s (timeout %s)", id, wantURL, ociRefString(declared), timeout))
	// The source pulls now (flux reconcile source oci), so the proof is at
	// what the registry serves now.
	token, err := RequestReconcileToken(wctx, cl.Client, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nm}})
	if err != nil {
		progress("could not ask the source to pull now (" + err.Error() + "); waiting for its own interval")
	}
	var failed string
	o, err := wait.For(wctx, cl.Client, &sourcev1.OCIRepositoryList{}, ns, nm, func(o *sourcev1.OCIRepository) (bool, string) {
		ok, bad, desc := OCISourceReady(o, token, wantURL)
		if bad {
			failed = desc
			return true, desc
		}
		return ok, desc
	})
	switch {
	case failed != "":
		sc.Verdict, sc.Message = verify.Fail, fmt.Sprintf("%s from %s, %s: source-controller failed it: %s", id, wantURL, ociRefString(declared), failed)
	case err != nil:
		sc.Verdict, sc.Message = verify.Fail, fmt.Sprintf("OCIRepository %s", err)
	}
	if sc.Verdict == verify.Fail {
		rc.Verdict, rc.Message = verify.Skip, "no artifact to compare with"
		return []verify.Check{sc, rc}
	}
	rev := o.Status.Artifact.Revision
	sc.Evidence = []string{"status.artifact.revision=" + rev, "spec.url=" + o.Spec.URL}
	served, err := RegistryRevision(wctx, cl.Client, o, rev)
	switch {
	case errors.Is(err, errOCIUnread):
		sc.Verdict = verify.Warn
		sc.Message = fmt.Sprintf("%s Ready, artifact %s from %s; %v, so the digest is source-controller's word alone", id, rev, o.Spec.URL, err)
	case err != nil:
		sc.Verdict = verify.Fail
		sc.Message = fmt.Sprintf("%s Ready, artifact %s, but the registry could not be read for %s: %v", id, rev, ociRefString(o), err)
	case servedRev != "" && rev != servedRev:
		sc.Verdict = verify.Fail
		sc.Message = fmt.Sprintf("%s Ready at %s, not the artifact this machine serves, %s", id, rev, servedRev)
	case served != rev:
		sc.Verdict = verify.Fail
		sc.Message = fmt.Sprintf("%s Ready at %s, but the registry serves %s for %s now: the artifact is not the registry's (the tag moved, or another registry answered); re-run the sync", id, rev, served, ociRefString(o))
	default:
		sc.Verdict = verify.Pass
		sc.Message = fmt.Sprintf("%s Ready, artifact %s from %s: the digest the registry serves for %s", id, rev, o.Spec.URL, ociRefString(o))
		sc.Evidence = append(sc.Evidence, "registry "+ociRefString(o)+" → "+served)
	}
	if sc.Verdict == verify.Fail {
		rc.Verdict, rc.Message = verify.Skip, "no artifact the registry serves to compare with"
		return []verify.Check{sc, rc}
	}
	return []verify.Check{sc, rootAppliedAt(ctx, cl, r.Root, rev, timeout, progress)}
}

// rootAppliedAt is sync.root-applied: the root Kustomization converged
// (converge's walk over the root alone: Ready at its generation having
// applied its source's current artifact) with lastAppliedRevision rev.
func rootAppliedAt(ctx context.Context, cl *apply.Cluster, root *kustomizev1.Kustomization, rev string, timeout time.Duration, progress apply.Progress) verify.Check {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc := GateRootApplied.New()
	progress(fmt.Sprintf("waiting for Kustomization %s/%s to apply %s", root.Namespace, root.Name, rev))
	co := converge.DefaultOptions()
	co.Namespace, co.Timeout = root.Namespace, timeout
	co.Select = func(k *kustomizev1.Kustomization) bool { return k.Namespace == root.Namespace && k.Name == root.Name }
	checks, _, err := converge.Walk(wctx, cl, co, progress)
	if err == nil {
		if bad := converge.Unconverged(checks); len(bad) > 0 {
			err = errors.New(bad[0].Message)
		}
	}
	var k kustomizev1.Kustomization
	if err == nil {
		err = cl.Client.Get(wctx, client.ObjectKey{Namespace: root.Namespace, Name: root.Name}, &k)
	}
	if err == nil && k.Status.LastAppliedRevision != rev {
		err = fmt.Errorf("lastAppliedRevision %s", k.Status.LastAppliedRevision)
	}
	if err != nil {
		rc.Verdict, rc.Message = verify.Fail, fmt.Sprintf("Kustomization %s/%s: %v (want lastAppliedRevision %s)", root.Namespace, root.Name, err, rev)
		return rc
	}
	rc.Verdict = verify.Pass
	rc.Message = fmt.Sprintf("Kustomization %s/%s Ready, lastAppliedRevision %s", k.Namespace, k.Name, k.Status.LastAppliedRevision)
	rc.Evidence = []string{"status.lastAppliedRevision=" + k.Status.LastAppliedRevision}
	return rc
}

// Annotations an OCIRepository on a temporary source carries beside the
// GitRepository's (AnnSource, AnnTemporaryURL, AnnTemporarySince,
// AnnDeclaredURL, AnnDeclaredSecret): what git declares that the override
// replaces, for the cutover to restore.
const (
	AnnDeclaredOCIRef     = AnnotationPrefix + "declared-oci-ref"     // spec.ref as JSON
	AnnDeclaredCertSecret = AnnotationPrefix + "declared-cert-secret" // spec.certSecretRef.name
	AnnDeclaredInsecure   = AnnotationPrefix + "declared-insecure"    // "true" when spec.insecure was
)

// OCITemporary is a temporary OCI source: the artifact this machine serves
// (--serve), read with the Secret that holds both the pull credential
// (.dockerconfigjson, spec.secretRef) and the CA (ca.crt,
// spec.certSecretRef).
type OCITemporary struct {
	URL, Tag, Secret string
	Since            time.Time
}

// OverrideOCI points src (the OCIRepository from the render) at t: its URL
// and tag, its Secret as both secretRef and certSecretRef, insecure off;
// disables kustomize-controller's reconciliation of it and records what
// git declares. A provider stays: source-controller uses a provider only
// when no pull Secret authenticates (ocirepository_controller.go
// reconcileSource, keychain Anonymous).
func OverrideOCI(src *unstructured.Unstructured, t *OCITemporary) error {
	o, err := ociOf(src)
	if err != nil {
		return err
	}
	a := src.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[ReconcileAnnotation] = ReconcileDisabled
	a[AnnSource] = SourceTemporary
	a[AnnTemporaryURL] = t.URL
	a[AnnTemporarySince] = t.Since.UTC().Format(time.RFC3339)
	a[AnnDeclaredURL] = o.Spec.URL
	if o.Spec.Reference != nil {
		b, err := json.Marshal(o.Spec.Reference)
		if err != nil {
			return err
		}
		a[AnnDeclaredOCIRef] = string(b)
	}
	if o.Spec.SecretRef != nil && o.Spec.SecretRef.Name != "" {
		a[AnnDeclaredSecret] = o.Spec.SecretRef.Name
	}
	if o.Spec.CertSecretRef != nil && o.Spec.CertSecretRef.Name != "" {
		a[AnnDeclaredCertSecret] = o.Spec.CertSecretRef.Name
	}
	if o.Spec.Insecure {
		a[AnnDeclaredInsecure] = "true"
	}
	for _, f := range []struct {
		v    any
		path []string
	}{
		{t.URL, []string{"spec", "url"}},
		{map[string]any{"tag": t.Tag}, []string{"spec", "ref"}},
		{map[string]any{"name": t.Secret}, []string{"spec", "secretRef"}},
		{map[string]any{"name": t.Secret}, []string{"spec", "certSecretRef"}},
	} {
		if err := unstructured.SetNestedField(src.Object, f.v, f.path...); err != nil {
			return err
		}
	}
	unstructured.RemoveNestedField(src.Object, "spec", "insecure")
	src.SetAnnotations(a)
	return nil
}

// DeclaredOCIOf restores, from the record OverrideOCI made on live, the
// OCIRepository spec fields git declares (url, ref, secretRef,
// certSecretRef, insecure) on a copy of live, the annotations of the
// temporary source removed; nil when live is not on a temporary source.
func DeclaredOCIOf(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	a := live.GetAnnotations()
	if a[AnnSource] != SourceTemporary {
		return nil, nil
	}
	u := live.DeepCopy()
	spec := map[string]any{}
	if s, ok, _ := unstructured.NestedMap(u.Object, "spec"); ok {
		spec = s
	}
	spec["url"] = a[AnnDeclaredURL]
	delete(spec, "ref")
	if r := a[AnnDeclaredOCIRef]; r != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(r), &m); err != nil {
			return nil, fmt.Errorf("OCIRepository %s/%s: annotation %s: %w", live.GetNamespace(), live.GetName(), AnnDeclaredOCIRef, err)
		}
		spec["ref"] = m
	}
	for key, ann := range map[string]string{"secretRef": AnnDeclaredSecret, "certSecretRef": AnnDeclaredCertSecret} {
		delete(spec, key)
		if n := a[ann]; n != "" {
			spec[key] = map[string]any{"name": n}
		}
	}
	delete(spec, "insecure")
	if a[AnnDeclaredInsecure] == "true" {
		spec["insecure"] = true
	}
	if err := unstructured.SetNestedMap(u.Object, spec, "spec"); err != nil {
		return nil, err
	}
	for _, k := range []string{ReconcileAnnotation, AnnSource, AnnTemporaryURL, AnnTemporarySince, AnnDeclaredURL, AnnDeclaredOCIRef, AnnDeclaredSecret, AnnDeclaredCertSecret, AnnDeclaredInsecure} {
		delete(a, k)
	}
	u.SetAnnotations(a)
	return u, nil
}

// ociServed is sync.temporary-source for an OCI root under --serve: the
// rendered OCIRepository pointed at the artifact this machine serves
// (OverrideOCI: its URL, the served tag, the serve Secret as secretRef and
// certSecretRef), what git declares recorded for the cutover.
func (p *SyncPhase) ociServed(r *Render, report *verify.Report) (verify.Check, error) {
	sv := p.o.Serve
	declared, err := ociOf(r.Source)
	if err != nil {
		return verify.Check{}, err
	}
	t := &OCITemporary{URL: sv.URL, Tag: sv.OCI().Tag, Secret: sv.SecretName(), Since: p.o.Now()}
	if err := OverrideOCI(r.Source, t); err != nil {
		return verify.Check{}, err
	}
	report.Facts["serveRevision"] = sv.Snapshot.Revision()
	report.Facts["serveOrigin"] = sv.Origin()
	report.Facts["temporarySource"] = t.URL
	report.Facts["temporarySince"] = t.Since.UTC().Format(time.RFC3339)
	report.Facts["declaredURL"] = declared.Spec.URL
	return GateTemporary.Pass(fmt.Sprintf("OCIRepository %s/%s on the artifact this machine serves at %s, tag %s (%s; %s; git declares %s, %s); kustomize-controller leaves it alone until `bootstrap cutover`",
		declared.Namespace, declared.Name, t.URL, t.Tag, sv.Origin(), sv.OCI().Why, declared.Spec.URL, ociRefString(declared))), nil
}
