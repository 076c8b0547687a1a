// Package kube builds the Kubernetes clients every cluster phase uses: one
// kubeconfig loading rule, one scheme with Flux's API types, and one field
// manager for server-side apply.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sync/atomic"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// FieldManager is the server-side apply field manager of every object this
// tool applies.
const FieldManager = "bootstrap"

// Config loads the REST config from the cluster flags (kubeconfig,
// context, request timeout) and the environment they were given, with
// this tool's user agent and rate limits.
func Config(f *Flags) (*rest.Config, error) {
	// cli-runtime falls back to localhost:8080 when no kubeconfig is found;
	// this tool refuses to guess a cluster (unless it runs in one).
	loader := f.ToRawKubeConfigLoader()
	if err := checkKubeconfigs(loader.ConfigAccess()); err != nil {
		return nil, err
	}
	raw, err := loader.RawConfig()
	if err == nil && len(raw.Clusters) == 0 && f.getenv("KUBERNETES_SERVICE_HOST") == "" {
		err = errors.New("no kubeconfig found")
	}
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w; pass --kubeconfig or set KUBECONFIG", err)
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w; pass --kubeconfig or set KUBECONFIG", err)
	}
	cfg.UserAgent = FieldManager
	// client-go's default of 5 requests/s would make the plan and the
	// permission checks (one request per object) take tens of seconds; the
	// API server's own priority and fairness protects it.
	cfg.QPS, cfg.Burst = 100, 300
	return cfg, nil
}

// checkKubeconfigs holds every kubeconfig file client-go would read to the
// input rule (a regular file, bounded size), so a kubeconfig that is a
// symlink to /dev/zero is refused instead of read until memory runs out.
// A missing file in $KUBECONFIG's list is skipped, as client-go skips it.
func checkKubeconfigs(ca clientcmd.ConfigAccess) error {
	if ca == nil {
		return nil
	}
	explicit := ca.GetExplicitFile()
	for _, p := range ca.GetLoadingPrecedence() {
		err := safeio.CheckFile(p, "kubeconfig "+p)
		if err == nil || (p != explicit && errors.Is(err, fs.ErrNotExist)) {
			continue
		}
		return fmt.Errorf("%w; pass --kubeconfig or set KUBECONFIG to a kubeconfig file", err)
	}
	return nil
}

// Scheme knows the core types, CRDs and Flux's source and kustomize APIs.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Client is a controller-runtime client with Scheme.
func Client(cfg *rest.Config) (client.WithWatch, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return c, nil
}

// ResourceManager is fluxcd/pkg/ssa's server-side apply manager with this
// tool's field manager and a kstatus poller.
func ResourceManager(c client.Client) *ssa.ResourceManager {
	poller := polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{})
	return ssa.NewResourceManager(c, poller, ssa.Owner{Field: FieldManager, Group: "bootstrap.homelab-ops.github.io"})
}

// Binding ends the requests of the REST configs it wraps when its context
// (the command's) ends — also the requests client libraries make without a
// context of their own (the RESTMapper's discovery) or with one that does
// not descend from the command's (an informer's) — so an interrupt stops a
// hanging request at once instead of after --request-timeout. Release
// lets later requests through again: a rollback after the interrupt.
type Binding struct {
	ctx      context.Context
	released atomic.Bool
}

// NewBinding binds requests to ctx.
func NewBinding(ctx context.Context) *Binding { return &Binding{ctx: ctx} }

// Release stops binding new requests (in-flight ones were already ended).
func (b *Binding) Release() { b.released.Store(true) }

// Wrap binds cfg's requests.
func (b *Binding) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if b.released.Load() {
				return rt.RoundTrip(r)
			}
			if b.ctx.Err() != nil {
				return nil, context.Cause(b.ctx)
			}
			rctx, cancel := context.WithCancelCause(r.Context())
			stop := context.AfterFunc(b.ctx, func() { cancel(context.Cause(b.ctx)) })
			done := func() { stop(); cancel(nil) }
			resp, err := rt.RoundTrip(r.WithContext(rctx))
			if err != nil {
				done()
				return nil, err
			}
			resp.Body = &closeFunc{ReadCloser: resp.Body, done: done}
			return resp, nil
		})
	})
}

type bindingKey struct{}

// WithBinding carries b in ctx, for Detach.
func WithBinding(ctx context.Context, b *Binding) context.Context {
	return context.WithValue(ctx, bindingKey{}, b)
}

// Detach returns a context that outlives ctx's cancellation, keeping its
// values, and releases the Binding ctx carries: for the work that must
// finish after an interrupt, such as a rollback. The caller bounds it with
// a timeout of its own.
func Detach(ctx context.Context) context.Context {
	if b, ok := ctx.Value(bindingKey{}).(*Binding); ok {
		b.Release()
	}
	return context.WithoutCancel(ctx)
}

// closeFunc calls done when the body is closed (a watch ends, a response
// was read): the request's context lives exactly as long as its body.
type closeFunc struct {
	io.ReadCloser
	done func()
}

func (c *closeFunc) Close() error {
	err := c.ReadCloser.Close()
	c.done()
	return err
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// selectorLabels are the labels a list or watch of a render's objects may
// select on: the render's part-of and instance labels, which stay the same
// across Flux versions (the version label does not).
var selectorLabels = [...]string{"app.kubernetes.io/part-of", "app.kubernetes.io/instance"}

// SelectorLabels are the selector labels (part-of, instance) o carries.
func SelectorLabels(o *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, k := range selectorLabels {
		if v, ok := o.GetLabels()[k]; ok {
			out[k] = v
		}
	}
	return out
}

// CommonLabels are the selector labels (part-of, instance) every one of
// objs carries with the same value; empty when they share none, and a
// selector on them would then select everything.
func CommonLabels(objs []*unstructured.Unstructured) map[string]string {
	if len(objs) == 0 {
		return nil
	}
	out := SelectorLabels(objs[0])
	for _, o := range objs[1:] {
		for k, v := range out {
			if o.GetLabels()[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}
