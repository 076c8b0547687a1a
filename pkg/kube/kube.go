// Package kube builds the Kubernetes clients every cluster phase uses: one
// kubeconfig loading rule, one scheme with Flux's API types, and one field
// manager for server-side apply.
package kube

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager of every object this
// tool applies.
const FieldManager = "bootstrap"

// Options locate the cluster.
type Options struct {
	// Kubeconfig is a kubeconfig path; empty means $KUBECONFIG, then
	// ~/.kube/config, then in-cluster.
	Kubeconfig string
	// Context is a kubeconfig context; empty means the current one.
	Context string
	// Timeout bounds each API request.
	Timeout time.Duration
}

// Config loads the REST config.
func Config(o Options) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w; pass --kubeconfig or set KUBECONFIG", err)
	}
	if o.Timeout > 0 {
		cfg.Timeout = o.Timeout
	}
	cfg.UserAgent = FieldManager
	// client-go's default of 5 requests/s would make the plan and the
	// permission checks (one request per object) take tens of seconds; the
	// API server's own priority and fairness protects it.
	cfg.QPS, cfg.Burst = 100, 300
	return cfg, nil
}

// Scheme knows the core types, CRDs and Flux's source and kustomize APIs.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme} {
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

// CountRequests wraps cfg's transport to count the HTTP requests made with
// it, for the report and the benchmarks.
func CountRequests(cfg *rest.Config) *atomic.Int64 {
	n := &atomic.Int64{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	return n
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
