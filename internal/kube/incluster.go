package kube

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// serviceAccountDir holds the files Kubernetes gives a pod's service
// account (client-go rest/config.go InClusterConfig).
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// deferredConfig is clientcmd.DeferredLoadingClientConfig (client-go
// v0.36.4 tools/clientcmd/merged_client_builder.go) whose in-cluster
// fallback reads the environment from getenv (inCluster), where
// client-go's reads the process's. The rule is client-go's: the in-cluster
// config is used only when the kubeconfig files load to an empty
// configuration or to the rules' default one. --request-timeout is set on
// the config chosen, not among the overrides the choice compares: there
// a timeout other than 0 (kubectl's default, not this tool's 30s) makes
// every config not the default, and a pod never reached its own.
type deferredConfig struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
	inCluster inCluster
	// timeout is --request-timeout, as clientcmd.ParseTimeout reads it.
	timeout string

	mu     sync.Mutex
	direct clientcmd.ClientConfig
}

// load merges the kubeconfig files once, as createClientConfig: a failed
// load is tried again on the next call.
func (c *deferredConfig) load() (clientcmd.ClientConfig, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.direct != nil {
		return c.direct, nil
	}
	merged, err := c.rules.Load()
	if err != nil {
		return nil, err
	}
	c.direct = clientcmd.NewNonInteractiveClientConfig(*merged, c.overrides.CurrentContext, c.overrides, c.rules)
	return c.direct, nil
}

func (c *deferredConfig) RawConfig() (clientcmdapi.Config, error) {
	cc, err := c.load()
	if err != nil {
		return clientcmdapi.Config{}, err
	}
	return cc.RawConfig()
}

func (c *deferredConfig) ClientConfig() (*rest.Config, error) {
	cfg, err := c.chosen()
	if err != nil || cfg == nil || c.timeout == "" {
		return cfg, err
	}
	// As clientcmd's DirectClientConfig sets overrides.Timeout
	// (client_config.go ClientConfig).
	d, err := clientcmd.ParseTimeout(c.timeout)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = d
	return cfg, nil
}

// chosen is the kubeconfig's REST config, or the in-cluster one by
// client-go's rule.
func (c *deferredConfig) chosen() (*rest.Config, error) {
	cc, err := c.load()
	if err != nil {
		return nil, err
	}
	cfg, err := cc.ClientConfig()
	switch {
	case err != nil:
		if !clientcmd.IsEmptyConfig(err) {
			return nil, err
		}
	case cfg != nil:
		if !c.rules.IsDefaultConfig(cfg) {
			return cfg, nil
		}
	}
	if c.inCluster.possible() {
		return c.inCluster.config()
	}
	return cfg, err
}

func (c *deferredConfig) Namespace() (string, bool, error) {
	cc, err := c.load()
	if err != nil {
		return "", false, err
	}
	ns, overridden, err := cc.Namespace()
	if (err != nil && !clientcmd.IsEmptyConfig(err)) || overridden || !c.inCluster.possible() {
		return ns, overridden, err
	}
	if ns != "" {
		if ns != "default" {
			return ns, false, nil
		}
		// "default" stands when the context sets it.
		if raw, err := cc.RawConfig(); err == nil {
			current := raw.CurrentContext
			if c.overrides.CurrentContext != "" {
				current = c.overrides.CurrentContext
			}
			if ctx := raw.Contexts[current]; ctx != nil && ctx.Namespace != "" {
				return ns, false, nil
			}
		}
	}
	return c.inCluster.namespace(), false, nil
}

func (c *deferredConfig) ConfigAccess() clientcmd.ConfigAccess { return c.rules }

// inCluster is the configuration of a pod's service account
// (rest.InClusterConfig, and clientcmd's inClusterClientConfig for
// Possible and Namespace) with the environment read from getenv; dir holds
// the service account's files.
type inCluster struct {
	getenv func(string) string
	dir    string
}

// possible is inClusterClientConfig.Possible: the API server's service in
// the environment and a token file.
func (ic inCluster) possible() bool {
	fi, err := os.Stat(filepath.Join(ic.dir, "token"))
	return ic.getenv("KUBERNETES_SERVICE_HOST") != "" && ic.getenv("KUBERNETES_SERVICE_PORT") != "" &&
		err == nil && !fi.IsDir()
}

// config is rest.InClusterConfig. inClusterClientConfig then applies the
// overrides' server, token and CA file: the flags this tool registers set
// none of them, and --request-timeout does not reach it.
func (ic inCluster) config() (*rest.Config, error) {
	host, port := ic.getenv("KUBERNETES_SERVICE_HOST"), ic.getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, rest.ErrNotInCluster
	}
	tokenFile, rootCAFile := filepath.Join(ic.dir, "token"), filepath.Join(ic.dir, "ca.crt")
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, err
	}
	tls := rest.TLSClientConfig{}
	if _, err := certutil.NewPool(rootCAFile); err != nil {
		// client-go logs it and goes on with the system's roots.
		klog.Errorf("Expected to load root CA config from %s, but got err: %v", rootCAFile, err)
	} else {
		tls.CAFile = rootCAFile
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		TLSClientConfig: tls,
		BearerToken:     string(token),
		BearerTokenFile: tokenFile,
	}, nil
}

// namespace is inClusterClientConfig.Namespace: $POD_NAMESPACE, else the
// service account's, else "default".
func (ic inCluster) namespace() string {
	if ns := ic.getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if data, err := os.ReadFile(filepath.Join(ic.dir, "namespace")); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}
