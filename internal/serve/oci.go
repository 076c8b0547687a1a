package serve

// --serve for an OCI root (issue 46 item 4b): the work tree as a Flux OCI
// artifact served read-only behind the run's token. Run serves it for a
// state of kind OCIRepository (ocisource.go); rootsync.OverrideOCI points
// the OCIRepository at it; internal/cutover (oci.go) moves it back.

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homelab-ops/bootstrap/internal/ociartifact"
)

// ociServedHost names the in-process registry while the artifact is
// loaded into it; requests never leave the process.
const ociServedHost = "bootstrap.serve.invalid"

// OCIHandler serves dir as one Flux OCI artifact (internal/ociartifact:
// what `flux push artifact` makes) at repository RepoName, tag tag, from an
// in-memory registry (go-containerregistry's, the one the sandbox runs):
// read-only (GET and HEAD; anything else 405), every request behind basic
// auth with Username and token (401 with a Basic challenge otherwise, as
// source-controller's keychain answers). It returns the revision
// source-controller will report for the tag, `<tag>@sha256:<digest>`.
func OCIHandler(dir, tag, token string, meta ociartifact.Meta) (http.Handler, string, error) {
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	ref := fmt.Sprintf("%s/%s:%s", ociServedHost, RepoName, tag)
	rev, err := ociartifact.Push(context.Background(), dir, ref, meta, remote.WithTransport(inProcess{reg}))
	if err != nil {
		return nil, "", fmt.Errorf("serve: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != Username || subtle.ConstantTimeCompare([]byte(pass), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="bootstrap serve"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path != "/v2/" && !strings.HasPrefix(r.URL.Path, "/v2/"+RepoName+"/") {
			http.NotFound(w, r)
			return
		}
		reg.ServeHTTP(w, r)
	}), rev, nil
}

// OCIRef is the reference a served artifact is pulled by, for a listener
// at host (host:port): the OCIRepository's spec.url is "oci://" + it.
func OCIRef(host string) string { return host + "/" + RepoName }

// inProcess is a RoundTripper that hands requests to a handler in this
// process: the artifact is loaded into the served registry without a
// listener.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	in := r.Clone(r.Context())
	if in.Body == nil {
		in.Body = http.NoBody // a server's request always has one
	}
	t.h.ServeHTTP(rec, in)
	res := rec.Result()
	res.Request = r // the client resolves upload locations against it
	return res, nil
}

// OCISecret is the served OCIRepository's Secret, named SecretName and
// labelled as Secret's: a kubernetes.io/dockerconfigjson Secret whose
// .dockerconfigjson holds Username and the token for host (what
// source-controller's keychain reads from spec.secretRef) and whose ca.crt
// is the run's CA (what it reads from spec.certSecretRef), so one Secret is
// both references.
func (c *Credentials) OCISecret(namespace, host string) (*unstructured.Unstructured, error) {
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
		"username": Username, "password": c.Token,
		"auth": base64.StdEncoding.EncodeToString([]byte(Username + ":" + c.Token)),
	}}})
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SecretName, Labels: map[string]string{SecretLabel: "serve"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg, "ca.crt": c.CAPEM},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
