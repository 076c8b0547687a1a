package kube

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster: {server: https://%[1]s.example:6443}
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: u}
users:
- name: u
  user: {token: t}
current-context: %[1]s
`

func writeKubeconfig(t *testing.T, dir, cluster string) string {
	t.Helper()
	p := filepath.Join(dir, cluster+".yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(kubeconfigYAML, "%[1]s", cluster)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFlagsReadTheGivenEnvironment: the kubeconfig comes from getenv's
// KUBECONFIG and HOME and from --kubeconfig, never from the process's
// environment (which the tests do not touch: they run in parallel).
func TestFlagsReadTheGivenEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := writeKubeconfig(t, dir, "a"), writeKubeconfig(t, dir, "b")
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(writeKubeconfig(t, dir, "home"), filepath.Join(home, ".kube", "config")); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		host string // "" for an error
		err  string
	}{
		{"KUBECONFIG", map[string]string{"KUBECONFIG": a, "HOME": home}, nil, "https://a.example:6443", ""},
		{"KUBECONFIG list, first wins", map[string]string{"KUBECONFIG": b + string(filepath.ListSeparator) + a + string(filepath.ListSeparator) + b}, nil, "https://b.example:6443", ""},
		{"HOME/.kube/config", map[string]string{"HOME": home}, nil, "https://home.example:6443", ""},
		{"--kubeconfig over KUBECONFIG", map[string]string{"KUBECONFIG": a}, []string{"--kubeconfig", b}, "https://b.example:6443", ""},
		{"--context", map[string]string{"KUBECONFIG": a + string(filepath.ListSeparator) + b}, []string{"--context", "b"}, "https://b.example:6443", ""},
		{"nothing in HOME", map[string]string{"HOME": empty}, nil, "", "no kubeconfig found; pass --kubeconfig or set KUBECONFIG"},
		{"KUBECONFIG names no file", map[string]string{"KUBECONFIG": filepath.Join(empty, "none"), "HOME": home}, nil, "", "no kubeconfig found"},
		{"--kubeconfig names no file", map[string]string{"HOME": home}, []string{"--kubeconfig", filepath.Join(empty, "none")}, "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(t, tc.env, "", tc.args, tc.err)
			if cfg == nil {
				return
			}
			if cfg.Host != tc.host || cfg.Timeout.String() != "30s" {
				t.Errorf("host %s timeout %s, want %s 30s", cfg.Host, cfg.Timeout, tc.host)
			}
		})
	}
}

// config is Config of the cluster flags reading env, args parsed, with
// the service account's files in sa ("": the pod's); nil when it errs
// saying wantErr, as it must when wantErr is set.
func config(t *testing.T, env map[string]string, sa string, args []string, wantErr string) *rest.Config {
	t.Helper()
	f := ClusterFlags(func(k string) string { return env[k] })
	if sa != "" {
		f.serviceAccount = sa
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(f)
	switch {
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("Config: %v, want an error saying %q", err, wantErr)
	case wantErr == "" && err != nil:
		t.Fatal(err)
	case wantErr != "":
		return nil
	}
	return cfg
}

// serviceAccount writes a pod's service account files into a new
// directory: the token, and the CA and namespace when given.
func serviceAccount(t *testing.T, ca []byte, namespace string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{"token": []byte("tok"), "ca.crt": ca, "namespace": []byte(namespace + "\n")}
	for name, b := range files {
		if b == nil || (name == "namespace" && namespace == "") {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// with is env with more variables set.
func with(env map[string]string, kv ...string) map[string]string {
	out := maps.Clone(env)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestInClusterFollowsGetenv: the in-cluster fallback follows client-go's
// rule (DeferredLoadingClientConfig: only when the kubeconfig files load
// to nothing but client-go's default config) with KUBERNETES_SERVICE_HOST
// and _PORT from getenv: the process's environment, set here to another
// service, is never read. --request-timeout is set on the config chosen,
// so the default 30s leaves the in-cluster one reachable.
func TestInClusterFollowsGetenv(t *testing.T) {
	ca, _, err := certutil.GenerateSelfSignedCertKey("kubernetes", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sa, noCA, none := serviceAccount(t, ca, ""), serviceAccount(t, nil, ""), t.TempDir()
	a := writeKubeconfig(t, t.TempDir(), "a")
	service := map[string]string{"HOME": t.TempDir(), "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	pod := []string{"--request-timeout", "0"}
	const fallback = "http://localhost:8080" // client-go's default config
	for _, tc := range []struct {
		name    string
		env     map[string]string // getenv's
		process string            // the process's KUBERNETES_SERVICE_HOST
		sa      string
		args    []string
		host    string // "" for an error
		token   string // the token file, "" when not in-cluster
		ca      string
		err     string
	}{
		{"getenv's service, none in the process: in-cluster", service, "", sa, pod, "https://10.0.0.1:443", filepath.Join(sa, "token"), filepath.Join(sa, "ca.crt"), ""},
		{"getenv's service, not the process's", service, "10.9.9.9", sa, pod, "https://10.0.0.1:443", filepath.Join(sa, "token"), filepath.Join(sa, "ca.crt"), ""},
		{"the process's service only: not in-cluster", map[string]string{"HOME": service["HOME"]}, "10.9.9.9", sa, pod, "", "", "", "no kubeconfig found"},
		{"no port in getenv: not in-cluster", with(service, "KUBERNETES_SERVICE_PORT", ""), "10.9.9.9", sa, pod, fallback, "", "", ""},
		{"no token file: not in-cluster", service, "", none, pod, fallback, "", "", ""},
		{"a CA that does not load: the system's roots", service, "", noCA, pod, "https://10.0.0.1:443", filepath.Join(noCA, "token"), "", ""},
		{"KUBECONFIG over the service", with(service, "KUBECONFIG", a), "", sa, pod, "https://a.example:6443", "", "", ""},
		{"--kubeconfig over the service", service, "", sa, append([]string{"--kubeconfig", a}, pod...), "https://a.example:6443", "", "", ""},
		{"the default timeout: in-cluster all the same", service, "", sa, nil, "https://10.0.0.1:443", filepath.Join(sa, "token"), filepath.Join(sa, "ca.crt"), ""},
		{"a timeout over a kubeconfig", with(service, "KUBECONFIG", a), "", sa, []string{"--request-timeout", "5s"}, "https://a.example:6443", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", tc.process)
			t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
			cfg := config(t, tc.env, tc.sa, tc.args, tc.err)
			if cfg == nil {
				return
			}
			if cfg.Host != tc.host || cfg.BearerTokenFile != tc.token || cfg.CAFile != tc.ca {
				t.Errorf("host %s token file %q CA %q, want %s %q %q", cfg.Host, cfg.BearerTokenFile, cfg.CAFile, tc.host, tc.token, tc.ca)
			}
			want := 30 * time.Second // the flag's default
			if len(tc.args) > 0 {
				want, _ = clientcmd.ParseTimeout(tc.args[len(tc.args)-1])
			}
			if cfg.Timeout != want {
				t.Errorf("timeout %s, want %s", cfg.Timeout, want)
			}
			if tc.token != "" && cfg.BearerToken != "tok" {
				t.Errorf("token %q, want the token file's", cfg.BearerToken)
			}
		})
	}
}

// TestInClusterNamespace: in a pod, the namespace a kubeconfig does not
// set is getenv's POD_NAMESPACE, else the service account's (client-go's
// DeferredLoadingClientConfig.Namespace).
func TestInClusterNamespace(t *testing.T) {
	t.Parallel()
	sa := serviceAccount(t, nil, "apps")
	a := writeKubeconfig(t, t.TempDir(), "a")
	service := map[string]string{"HOME": t.TempDir(), "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		sa   string
		want string
	}{
		{"POD_NAMESPACE", with(service, "POD_NAMESPACE", "flux-system"), sa, "flux-system"},
		{"the service account's", service, sa, "apps"},
		{"neither", service, serviceAccount(t, nil, ""), "default"},
		{"a kubeconfig without one, in a pod", with(service, "KUBECONFIG", a), sa, "apps"},
		{"a kubeconfig without one, outside", map[string]string{"KUBECONFIG": a}, sa, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := ClusterFlags(func(k string) string { return tc.env[k] })
			f.serviceAccount = tc.sa
			ns, _, err := f.ToRawKubeConfigLoader().Namespace()
			if err != nil || ns != tc.want {
				t.Errorf("Namespace: %q, %v; want %q", ns, err, tc.want)
			}
		})
	}
}
