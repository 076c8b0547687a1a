// Package kube builds the Kubernetes clients every cluster phase uses: one
// kubeconfig loading rule, one scheme with Flux's API types, and one field
// manager for server-side apply.
package kube

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/ssa"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager of every object this
// tool applies.
const FieldManager = "bootstrap"

// Config loads the REST config from the cluster flags (kubeconfig,
// context, request timeout), with this tool's user agent and rate limits.
func Config(getter genericclioptions.RESTClientGetter) (*rest.Config, error) {
	// cli-runtime falls back to localhost:8080 when no kubeconfig is found;
	// this tool refuses to guess a cluster (unless it runs in one).
	raw, err := getter.ToRawKubeConfigLoader().RawConfig()
	if err == nil && len(raw.Clusters) == 0 && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		err = errors.New("no kubeconfig found")
	}
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w; pass --kubeconfig or set KUBECONFIG", err)
	}
	cfg, err := getter.ToRESTConfig()
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

// ClusterFlags are the flags that pick the cluster: --kubeconfig, --context
// and --request-timeout (cli-runtime's, as kubectl has them).
func ClusterFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	// Only the flags this tool documents; a nil field registers no flag.
	f.CacheDir, f.ClusterName, f.AuthInfoName, f.Namespace, f.APIServer, f.TLSServerName = nil, nil, nil, nil, nil, nil
	f.Insecure, f.CertFile, f.KeyFile, f.CAFile, f.BearerToken, f.Username, f.Password = nil, nil, nil, nil, nil, nil, nil
	f.Impersonate, f.ImpersonateUID, f.ImpersonateGroup, f.ImpersonateUserExtra, f.DisableCompression = nil, nil, nil, nil, nil
	*f.Timeout = "30s"
	return f
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
	CountRequestsInto(cfg, n)
	return n
}

// CountRequestsInto wraps cfg's transport to add its HTTP requests to n: a
// command that connects once per phase counts every phase's requests.
func CountRequestsInto(cfg *rest.Config, n *atomic.Int64) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
