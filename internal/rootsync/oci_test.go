package rootsync

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const ociFixture = "../../testdata/layouts/oci-root"

func ociOpts(repo string) Options {
	return Options{Repo: repo, Path: "clusters/sandbox", Namespace: "flux-system", RootName: "oci-root"}
}

// TestGateSourceOCIRoot: sync.source passes a root that reads an
// OCIRepository (ours, and the Flux Operator fleet's declared one) and
// refuses a Bucket root saying why.
func TestGateSourceOCIRoot(t *testing.T) {
	r, err := Build(ociOpts(ociFixture))
	if err != nil {
		t.Fatal(err)
	}
	if !IsOCIRoot(r) {
		t.Fatalf("the root's source is %v, want the OCIRepository", r.Source)
	}
	if c := find(t, Static(r), GateSource.ID); c.Verdict != verify.Pass || !strings.Contains(c.Message, "OCIRepository flux-system/oci-root, url oci://registry.example.invalid/fleet/oci-root") {
		t.Fatalf("source gate: %s %s", c.Verdict, c.Message)
	}
	fleet, err := Build(Options{Repo: "../../testdata/layouts/fleet", Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system"})
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, Static(fleet), GateSource.ID); !IsOCIRoot(fleet) || c.Verdict != verify.Pass {
		t.Fatalf("fleet (FluxInstance sync.kind OCIRepository): source gate %s %s", c.Verdict, c.Message)
	}

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(ociFixture)); err != nil {
		t.Fatal(err)
	}
	bucket := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\nmetadata:\n  name: oci-root\n  namespace: flux-system\nspec:\n  interval: 10m\n  bucketName: fleet\n  endpoint: minio.example.invalid\n---\n" +
		"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: oci-root\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/sandbox\n  prune: true\n  sourceRef:\n    kind: Bucket\n    name: oci-root\n"
	if err := os.WriteFile(filepath.Join(dir, "clusters/sandbox/sync.yaml"), []byte(bucket), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = Build(ociOpts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, Static(r), GateSource.ID); c.Verdict != verify.Fail || !strings.Contains(c.Message, "reads a Bucket") || !strings.Contains(c.Message, "GitRepository or an OCIRepository") {
		t.Fatalf("Bucket root: source gate %s %s", c.Verdict, c.Message)
	}
}

// TestOCIRefuseTemporary: --serve and --source-url serve Git; an OCI root
// refuses them before the first request, naming the flag. A Git root and
// an OCI root without them are not refused.
func TestOCIRefuseTemporary(t *testing.T) {
	r, err := Build(ociOpts(ociFixture))
	if err != nil {
		t.Fatal(err)
	}
	git, err := Build(opts(fixture, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		r    *Render
		o    RunOptions
		says string
	}{
		{"serve is served", r, RunOptions{Serve: &serve.Prepared{}}, ""},
		{"source-url", r, RunOptions{Source: &Temporary{URL: "https://git.example.com/x.git"}}, "--source-url: the root flux-system/oci-root reads OCIRepository flux-system/oci-root"},
		{"none", r, RunOptions{}, ""},
		{"git root", git, RunOptions{Source: &Temporary{URL: "https://git.example.com/x.git"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ociRefuseTemporary(tt.r, tt.o)
			if tt.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v, want an input error saying %q", err, tt.says)
			}
		})
	}
}

// TestOCISourceReady: sync.source-ready's condition on an OCIRepository,
// and source-controller's failure of the fetch asked for ending the wait.
func TestOCISourceReady(t *testing.T) {
	const url = "oci://registry.example/fleet"
	oci := func(status metav1.ConditionStatus, reason, handled string, rev string) *sourcev1.OCIRepository {
		o := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "oci-root", Generation: 3}}
		o.Spec.URL = url
		o.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, ObservedGeneration: 3, Message: reason + " message"}}
		if status == metav1.ConditionFalse {
			o.Status.Conditions = append(o.Status.Conditions, metav1.Condition{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: meta.ProgressingWithRetryReason, ObservedGeneration: 3})
		}
		o.Status.LastHandledReconcileAt, o.Status.ObservedGeneration = handled, 3
		if rev != "" {
			o.Status.Artifact = &meta.Artifact{Revision: rev}
		}
		return o
	}
	const rev = "sandbox@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tt := range []struct {
		name        string
		o           *sourcev1.OCIRepository
		token, want string
		ok, failed  bool
		says        string
	}{
		{"ready at the fetch asked for", oci(metav1.ConditionTrue, meta.SucceededReason, "t1", rev), "t1", url, true, false, ""},
		{"the fetch asked for not handled yet", oci(metav1.ConditionTrue, meta.SucceededReason, "t0", rev), "t1", url, false, false, "not handled yet"},
		{"no artifact", oci(metav1.ConditionTrue, meta.SucceededReason, "t1", ""), "t1", url, false, false, ""},
		{"another URL", oci(metav1.ConditionTrue, meta.SucceededReason, "t1", rev), "t1", "oci://other.example/fleet", false, false, ""},
		{"the controller failed the fetch asked for", oci(metav1.ConditionFalse, sourcev1.OCIPullFailedReason, "t1", ""), "t1", url, false, true, sourcev1.OCIPullFailedReason + " message"},
		{"a failure while the spec names another URL", oci(metav1.ConditionFalse, sourcev1.OCIPullFailedReason, "t1", ""), "t1", "oci://other.example/fleet", false, false, ""},
		{"an earlier failure, the fetch not handled yet", oci(metav1.ConditionFalse, sourcev1.OCIPullFailedReason, "t0", ""), "t1", url, false, false, "not handled yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, failed, desc := OCISourceReady(tt.o, tt.token, tt.want)
			if ok != tt.ok || failed != tt.failed || !strings.Contains(desc, tt.says) {
				t.Fatalf("OCISourceReady = %t, %t, %q; want %t, %t saying %q", ok, failed, desc, tt.ok, tt.failed, tt.says)
			}
		})
	}
}

// TestRegistryRevision reads a real registry (go-containerregistry's, over
// TLS trusted through certSecretRef, as source-controller is, and over
// plain HTTP with insecure: true, and behind a password given by an image
// pull Secret) and gets source-controller's revision for every kind of
// ref; a missing tag and refused credentials are the registry's errors; a
// workload identity is not read here.
func TestRegistryRevision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tlsSrv := httptest.NewUnstartedServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted cases' handshakes
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer plainSrv.Close()
	// A registry that wants a user and password (HTTP basic, as a
	// docker-registry Secret gives them).
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	authSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "fleet" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="fleet"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer authSrv.Close()
	host := func(s *httptest.Server) string {
		return strings.TrimPrefix(strings.TrimPrefix(s.URL, "https://"), "http://")
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	push := func(ref string, opts ...name.Option) {
		t.Helper()
		r, err := name.ParseReference(ref, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithTransport(tlsSrv.Client().Transport)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tag := range []string{"sandbox", "1.2.0"} {
		push(host(tlsSrv) + "/fleet/app:" + tag)
		push(host(plainSrv)+"/fleet/app:"+tag, name.Insecure)
	}
	authRef, _ := name.ParseReference(host(authSrv)+"/fleet/app:sandbox", name.Insecure)
	if err := remote.Write(authRef, img, remote.WithContext(ctx), remote.WithAuth(&authn.Basic{Username: "fleet", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
	dockerConfig := func(name, host, user, pass string) *corev1.Secret {
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"` + host + `":{"auth":"` + auth + `"}}}`)}}
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	cl := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "registry-ca"}, Data: map[string][]byte{"ca.crt": ca},
	},
		dockerConfig("registry-auth", "http://"+host(authSrv)+"/v1/", "fleet", "s3cret"),
		dockerConfig("wrong-auth", host(authSrv), "fleet", "guess"),
		dockerConfig("other-registry", "ghcr.io", "fleet", "s3cret"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "basic"}, Data: map[string][]byte{"username": []byte("fleet"), "password": []byte("s3cret")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "puller"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "other-registry"}, {Name: "registry-auth"}}},
	).Build()
	obj := func(srv *httptest.Server, ref *sourcev1.OCIRepositoryRef, edit func(*sourcev1.OCIRepository)) *sourcev1.OCIRepository {
		o := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "oci-root"}}
		o.Spec.URL = "oci://" + host(srv) + "/fleet/app"
		o.Spec.Reference = ref
		if srv != tlsSrv {
			o.Spec.Insecure = true
		} else {
			o.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "registry-ca"}
		}
		if edit != nil {
			edit(o)
		}
		return o
	}
	secretRef := func(n string) func(*sourcev1.OCIRepository) {
		return func(o *sourcev1.OCIRepository) { o.Spec.SecretRef = &meta.LocalObjectReference{Name: n} }
	}
	for _, tt := range []struct {
		name        string
		o           *sourcev1.OCIRepository
		artifactRev string
		want        string
		errSays     string
		unread      bool
	}{
		{"tag over TLS, CA from certSecretRef", obj(tlsSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, nil), "", "sandbox@" + digest.String(), "", false},
		{"tag, insecure", obj(plainSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, nil), "", "sandbox@" + digest.String(), "", false},
		{"digest", obj(tlsSrv, &sourcev1.OCIRepositoryRef{Digest: digest.String(), Tag: "ignored"}, nil), "", digest.String(), "", false},
		{"semver: the tag the controller chose", obj(tlsSrv, &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0"}, nil), "1.2.0@sha256:0", "1.2.0@" + digest.String(), "", false},
		{"no ref: latest, not pushed", obj(tlsSrv, nil, nil), "", "", "MANIFEST_UNKNOWN", false},
		{"a tag not pushed", obj(tlsSrv, &sourcev1.OCIRepositoryRef{Tag: "nope"}, nil), "", "", "MANIFEST_UNKNOWN", false},
		{"no CA: the certificate is not trusted", obj(tlsSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, func(o *sourcev1.OCIRepository) { o.Spec.CertSecretRef = nil }), "", "", "certificate", false},
		{"the CA Secret missing", obj(tlsSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, func(o *sourcev1.OCIRepository) { o.Spec.CertSecretRef.Name = "absent" }), "", "", "not found", false},
		{"secretRef: the docker config's entry for the registry", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, secretRef("registry-auth")), "", "sandbox@" + digest.String(), "", false},
		{"serviceAccountName: its image pull Secrets, the one with the registry", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, func(o *sourcev1.OCIRepository) { o.Spec.ServiceAccountName = "puller" }), "", "sandbox@" + digest.String(), "", false},
		{"no credentials: refused", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, nil), "", "", "401 Unauthorized", false},
		{"wrong password: refused", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, secretRef("wrong-auth")), "", "", "401 Unauthorized", false},
		{"another registry's entry only: anonymous, refused", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, secretRef("other-registry")), "", "", "401 Unauthorized", false},
		{"secretRef missing", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, secretRef("absent")), "", "", "not found", false},
		{"not a docker config Secret: the controller's", obj(authSrv, &sourcev1.OCIRepositoryRef{Tag: "sandbox"}, secretRef("basic")), "", "", ".dockerconfigjson", true},
		{"workload identity: the controller's", obj(tlsSrv, nil, func(o *sourcev1.OCIRepository) { o.Spec.Provider = sourcev1.AmazonOCIProvider }), "", "", "aws", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RegistryRevision(ctx, cl, tt.o, tt.artifactRev)
			if tt.errSays != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSays) || errors.Is(err, errOCIUnread) != tt.unread {
					t.Fatalf("RegistryRevision = %q, %v; want an error saying %q (not read here: %t)", got, err, tt.errSays, tt.unread)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("RegistryRevision = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestOverrideOCIRoundTrip: the temporary OCI source replaces url, ref,
// secretRef, certSecretRef and insecure, records what git declares, and
// DeclaredOCIOf gives back exactly git's spec without the records.
func TestOverrideOCIRoundTrip(t *testing.T) {
	r, err := Build(ociOpts(ociFixture))
	if err != nil {
		t.Fatal(err)
	}
	withAll := r.Source.DeepCopy()
	withAll.Object["spec"] = map[string]any{"interval": "5m", "url": "oci://ghcr.io/acme/fleet", "insecure": true, "provider": "generic",
		"ref": map[string]any{"digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111", "tag": "v1"}, "secretRef": map[string]any{"name": "ghcr"}}
	tmp := &OCITemporary{URL: "oci://10.0.0.5:8443/gitops", Tag: "main", Secret: "bootstrap-serve-auth", Since: time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)}
	for name, src := range map[string]*unstructured.Unstructured{"fixture": r.Source, "digest, insecure, secretRef": withAll} {
		t.Run(name, func(t *testing.T) {
			declared := src.DeepCopy()
			over := src.DeepCopy()
			if err := OverrideOCI(over, tmp); err != nil {
				t.Fatal(err)
			}
			o, err := ociOf(over)
			if err != nil {
				t.Fatal(err)
			}
			if o.Spec.URL != tmp.URL || o.Spec.Reference == nil || o.Spec.Reference.Tag != "main" || o.Spec.Reference.Digest != "" ||
				o.Spec.SecretRef.Name != tmp.Secret || o.Spec.CertSecretRef.Name != tmp.Secret || o.Spec.Insecure {
				t.Fatalf("overridden spec %+v", o.Spec)
			}
			if a := over.GetAnnotations(); a[ReconcileAnnotation] != ReconcileDisabled || a[AnnSource] != SourceTemporary || a[AnnTemporarySince] != "2026-12-06T05:00:00Z" {
				t.Fatalf("annotations %v", a)
			}
			back, err := DeclaredOCIOf(over)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(back.Object["spec"], declared.Object["spec"]) || len(back.GetAnnotations()) != len(declared.GetAnnotations()) {
				t.Fatalf("restored\n%v\nannotations %v\nwant git's\n%v\nannotations %v", back.Object["spec"], back.GetAnnotations(), declared.Object["spec"], declared.GetAnnotations())
			}
		})
	}
	if u, err := DeclaredOCIOf(r.Source); u != nil || err != nil {
		t.Fatalf("DeclaredOCIOf of a source not on a temporary one: %v, %v", u, err)
	}
}
