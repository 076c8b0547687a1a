package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The sync command line: input errors exit 2 before any cluster is
// contacted; a before-gate failure exits 1 with the gate in the JSON.
func TestSyncCLIRefusals(t *testing.T) {
	t.Parallel()
	const repo, operator = "../../testdata/homelab", "../../testdata/layouts/operator"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no environment, two clusters", []string{"--repo", repo}, 2, "which environment? ../../testdata/homelab declares 2 cluster roots: pass one of --path clusters/dev, --path clusters/prod"},
		{"env and path", []string{"--repo", repo, "--env", "dev", "--path", "clusters/dev"}, 2, "exclusive"},
		{"unknown environment", []string{"--repo", repo, "--env", "staging"}, 2, "clusters/staging: no such directory"},
		{"branch without url", []string{"--repo", repo, "--env", "prod", "--source-branch", "main"}, 2, "need --source-url"},
		{"no kubeconfig", []string{"--repo", repo, "--env", "prod", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "/nonexistent/kubeconfig"},
		{"a declared root of another kind", []string{"--repo", repo, "--env", "prod", "--source-kind", "Bucket"}, 2, "sync applies a root whose source is a GitRepository or an OCIRepository"},
		{"an OCI URL as a temporary source", []string{"--repo", repo, "--env", "prod", "--source-url", "oci://registry.example.invalid/fleet"}, 2, "declare an OCI root with --source-kind OCIRepository"},
		{"an OCI root with a Git URL", []string{"--repo", repo, "--env", "prod", "--source-kind", "OCIRepository", "--source-url", "https://git.example.invalid/x.git"}, 2, "--source-url"},
		{"a declared OCI root where one is rendered", []string{"--repo", repo, "--env", "prod", "--source-kind", "OCIRepository", "--source-url", "oci://registry.example.invalid/fleet", "--source-ref", "latest", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "renders it"},
		{"a declared root without its url", []string{"--repo", repo, "--env", "prod", "--source-kind", "GitRepository"}, 2, "add --source-url"},
		{"a declared root with a temporary source", []string{"--repo", repo, "--env", "prod", "--source-kind", "GitRepository", "--source-url", "https://git.example.invalid/x.git", "--serve"}, 2, "drop --source-branch, --source-secret, --serve"},
		{"a declared root where one is rendered", []string{"--repo", repo, "--env", "prod", "--source-kind", "GitRepository", "--source-url", "https://git.example.invalid/x.git", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "renders it"},
		// --flux-instance chooses the declaring file, as check's does: a
		// file that does not declare the path is refused naming it; the
		// one that does gets the run as far as the cluster.
		{"a --flux-instance that declares no root for the path", []string{"--repo", operator, "--path", "kubernetes/flux/cluster", "--flux-instance", "kubernetes/apps/default/kustomization.yaml", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "--flux-instance kubernetes/apps/default/kustomization.yaml: no FluxInstance spec.sync"},
		{"the --flux-instance that declares the root", []string{"--repo", operator, "--path", "kubernetes/flux/cluster", "--flux-instance", "bootstrap/helmfile.d/values-flux-instance.yaml", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "kubeconfig /nonexistent/kubeconfig"},
		{"--flux-instance and --source-kind both declare it", []string{"--repo", operator, "--path", "kubernetes/flux/cluster", "--flux-instance", "bootstrap/helmfile.d/values-flux-instance.yaml", "--source-kind", "GitRepository", "--source-url", "https://git.example.invalid/x.git", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "already declares it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"sync", "-o", "json"}, tc.args...)...)
			var doc struct {
				ExitCode int
				Error    string
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if r.code != tc.code || doc.ExitCode != tc.code || !strings.Contains(doc.Error, tc.want) {
				t.Fatalf("exit %d (report %d), error %q; want %d and %q", r.code, doc.ExitCode, doc.Error, tc.code, tc.want)
			}
		})
	}
}

func TestCutoverCLINoCluster(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "cutover", "-o", "json", "--kubeconfig", "/nonexistent/kubeconfig")
	if r.code != 2 || !strings.Contains(r.stdout, "/nonexistent/kubeconfig") {
		t.Fatalf("cutover without a kubeconfig: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
