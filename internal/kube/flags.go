package kube

import (
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Flags are the flags that pick the cluster — --kubeconfig, --context and
// --request-timeout, cli-runtime's as kubectl has them — read with the
// environment the command was given rather than the process's: KUBECONFIG
// and HOME, and KUBERNETES_SERVICE_HOST and _PORT for the in-cluster
// fallback, are what the caller's getenv says (as sigs.k8s.io/kind passes
// its getenv to its kubeconfig paths), so a test, or a program embedding
// the command, gives each run an environment of its own.
type Flags struct {
	flags  *genericclioptions.ConfigFlags
	getenv func(string) string
	// serviceAccount is the directory of the in-cluster token, CA and
	// namespace (serviceAccountDir; tests set their own).
	serviceAccount string
}

// ClusterFlags are the cluster flags reading the environment with getenv.
func ClusterFlags(getenv func(string) string) *Flags {
	f := genericclioptions.NewConfigFlags(false)
	// Only the flags this tool documents; a nil field registers no flag.
	f.CacheDir, f.ClusterName, f.AuthInfoName, f.Namespace, f.APIServer, f.TLSServerName = nil, nil, nil, nil, nil, nil
	f.Insecure, f.CertFile, f.KeyFile, f.CAFile, f.BearerToken, f.Username, f.Password = nil, nil, nil, nil, nil, nil, nil
	f.Impersonate, f.ImpersonateUID, f.ImpersonateGroup, f.ImpersonateUserExtra, f.DisableCompression = nil, nil, nil, nil, nil
	*f.Timeout = "30s"
	return &Flags{flags: f, getenv: getenv, serviceAccount: serviceAccountDir}
}

// AddFlags registers the flags on fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) { f.flags.AddFlags(fs) }

// loadingRules are clientcmd.NewDefaultClientConfigLoadingRules (client-go
// tools/clientcmd/loader.go) with the environment from getenv: the files
// $KUBECONFIG lists (each once), else $HOME/.kube/config with its legacy
// migration rule; and --kubeconfig as the explicit path, as cli-runtime's
// ConfigFlags.toRawKubeConfigLoader sets it. client-go computes
// RecommendedHomeFile once, from the process's HOME at start-up.
func (f *Flags) loadingRules() *clientcmd.ClientConfigLoadingRules {
	home := filepath.Join(f.getenv("HOME"), clientcmd.RecommendedHomeDir)
	rules := &clientcmd.ClientConfigLoadingRules{
		Precedence:     []string{filepath.Join(home, clientcmd.RecommendedFileName)},
		MigrationRules: map[string]string{filepath.Join(home, clientcmd.RecommendedFileName): filepath.Join(home, ".kubeconfig")},
		// cli-runtime's default, which the loaded config is compared with
		// before the in-cluster one is tried (deferredConfig).
		DefaultClientConfig: &clientcmd.DefaultClientConfig,
	}
	if env := f.getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence, rules.WarnIfAllMissing = dedupe(filepath.SplitList(env)), true
	}
	if f.flags.KubeConfig != nil {
		rules.ExplicitPath = *f.flags.KubeConfig
	}
	return rules
}

// dedupe keeps the first of each path, as clientcmd's deduplicate does.
func dedupe(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ToRawKubeConfigLoader is cli-runtime's ConfigFlags.toRawKubeConfigLoader
// for the three flags this tool registers, with loadingRules, and the
// in-cluster fallback reading getenv (deferredConfig).
func (f *Flags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
	if f.flags.Context != nil {
		overrides.CurrentContext = *f.flags.Context
	}
	d := &deferredConfig{rules: f.loadingRules(), overrides: overrides, inCluster: inCluster{getenv: f.getenv, dir: f.serviceAccount}}
	if f.flags.Timeout != nil {
		d.timeout = *f.flags.Timeout
	}
	return emptyConfigError{d}
}

// ToRESTConfig is the REST config the flags and the environment name.
func (f *Flags) ToRESTConfig() (*rest.Config, error) {
	return f.ToRawKubeConfigLoader().ClientConfig()
}

// emptyConfigError says what cli-runtime's clientConfig says for an empty
// configuration (genericclioptions.ErrEmptyConfig, client_config.go).
type emptyConfigError struct{ cc clientcmd.ClientConfig }

func (c emptyConfigError) RawConfig() (clientcmdapi.Config, error) {
	cfg, err := c.cc.RawConfig()
	return cfg, verbose(err)
}

func (c emptyConfigError) ClientConfig() (*rest.Config, error) {
	cfg, err := c.cc.ClientConfig()
	return cfg, verbose(err)
}

func (c emptyConfigError) Namespace() (string, bool, error) {
	ns, ok, err := c.cc.Namespace()
	return ns, ok, verbose(err)
}

func (c emptyConfigError) ConfigAccess() clientcmd.ConfigAccess { return c.cc.ConfigAccess() }

func verbose(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		return genericclioptions.ErrEmptyConfig
	}
	return err
}
