package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
)

// secretInURL is the password every hostile URL carries; no output channel
// may ever show it.
const secretInURL = "hunter2-s3cr3t"

// hostileCase is one hostile command line: the exit code it must give and
// what its message must say (the input it names and the fix).
type hostileCase struct {
	name string
	args []string
	env  map[string]string
	code int
	want []string
}

// runHostile runs each case with --report-json and --junit, and checks the
// exit code, the message, the time it took, and that the URL password is
// in none of stdout, stderr, the JSON report and the JUnit report.
func runHostile(t *testing.T, cases []hostileCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			reportJSON, junit := filepath.Join(out, "report.json"), filepath.Join(out, "junit.xml")
			start := time.Now()
			r := cli(t, "", tc.env, append(tc.args, "--report-json", reportJSON, "--junit", junit)...)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s: an input error must be quick", took)
			}
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr+r.stdout, w) {
					t.Errorf("the report does not say %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
			channels := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
			for _, p := range []string{reportJSON, junit} {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Errorf("%s not written: %v", filepath.Base(p), err)
				}
				channels[filepath.Base(p)] = string(b)
				if tc.code == 2 && !strings.Contains(string(b), "exitCode\": 2") && strings.HasSuffix(p, ".json") {
					t.Errorf("--report-json does not record exit 2:\n%s", b)
				}
			}
			for name, s := range channels {
				if strings.Contains(s, secretInURL) {
					t.Errorf("%s shows the URL password:\n%s", name, s)
				}
			}
		})
	}
}

// zeroLink makes dir/name a symlink to /dev/zero.
func zeroLink(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", p); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHostileFiles: /dev/zero behind a symlink, fed to every flag that
// reads a file, and a symlink out of the directory, are exit 2 at once,
// naming the file and the fix; nothing is read until memory runs out.
func TestHostileFiles(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	tmp := t.TempDir()

	// A bundle directory whose rbac.yaml is /dev/zero, one whose rbac.yaml
	// is /etc/passwd, and a "tarball" that is /dev/zero.
	bundleZero := filepath.Join(tmp, "bundle-zero")
	writeTestFile(t, filepath.Join(bundleZero, "source-controller.yaml"), "kind: List\n")
	writeTestFile(t, filepath.Join(bundleZero, "policies.yaml"), "kind: List\n")
	zeroLink(t, bundleZero, "rbac.yaml")
	bundleOut := filepath.Join(tmp, "bundle-out")
	writeTestFile(t, filepath.Join(bundleOut, "source-controller.yaml"), "kind: List\n")
	writeTestFile(t, filepath.Join(bundleOut, "policies.yaml"), "kind: List\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(bundleOut, "rbac.yaml")); err != nil {
		t.Fatal(err)
	}
	tarZero := zeroLink(t, tmp, "manifests.tar.gz")

	// Overlays whose kustomization.yaml is /dev/zero, and whose patch is.
	ovZero := filepath.Join(tmp, "ov-zero")
	zeroLink(t, ovZero, "kustomization.yaml")
	ovPatch := filepath.Join(tmp, "ov-patch")
	writeTestFile(t, filepath.Join(ovPatch, "kustomization.yaml"), "patches:\n- path: strict.yaml\n  target: {kind: Deployment, name: kustomize-controller}\n")
	zeroLink(t, ovPatch, "strict.yaml")

	// A repository whose cluster root is /dev/zero, and one whose
	// resource is.
	repoRoot := filepath.Join(tmp, "repo-root")
	zeroLink(t, repoRoot, "clusters/dev/kustomization.yaml")
	repoRes := filepath.Join(tmp, "repo-res")
	writeTestFile(t, filepath.Join(repoRes, "clusters/dev/kustomization.yaml"), "resources:\n- sync.yaml\n")
	zeroLink(t, repoRes, "clusters/dev/sync.yaml")
	repoSops := filepath.Join(tmp, "repo-sops")
	writeTestFile(t, filepath.Join(repoSops, "clusters/dev/ks.yaml"), agekeytest.Kustomization("apps", "./apps", "sops-age"))
	zeroLink(t, repoSops, ".sops.yaml")

	kubeZero := zeroLink(t, tmp, "kubeconfig")
	keyZero := zeroLink(t, tmp, "age.key")
	keyText, _, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(tmp, "good.key")
	writeTestFile(t, keyFile, keyText)

	runHostile(t, []hostileCase{
		{"--manifests dir with rbac.yaml -> /dev/zero", []string{"render", "--manifests", bundleZero}, nil, 2,
			[]string{"--manifests " + bundleZero, "rbac.yaml (a symlink to /dev/zero)", "copy the file into"}},
		{"--manifests dir with rbac.yaml -> /etc/passwd", []string{"render", "--manifests", bundleOut}, nil, 2,
			[]string{"rbac.yaml (a symlink to /etc/passwd) points outside the directory", "copy the file into"}},
		{"--manifests tarball -> /dev/zero", []string{"render", "--manifests", tarZero}, nil, 2,
			[]string{"--manifests " + tarZero + " is not a regular file (a character device)", "pass a Flux release's manifests.tar.gz"}},
		{"--overlays kustomization.yaml -> /dev/zero", []string{"render", "--overlays", ovZero}, nil, 2,
			[]string{"--overlays " + ovZero, "kustomization.yaml (a symlink to /dev/zero)", "copy the file into"}},
		{"--overlays patch -> /dev/zero", []string{"render", "--overlays", ovPatch}, nil, 2,
			[]string{"strict.yaml (a symlink to /dev/zero)", "copy the file into"}},
		{"controllers --overlays -> /dev/zero", []string{"controllers", "--overlays", ovZero}, nil, 2,
			[]string{"kustomization.yaml (a symlink to /dev/zero)"}},
		{"sync --repo root -> /dev/zero", []string{"sync", "--repo", repoRoot, "--env", "dev"}, nil, 2,
			[]string{"--repo " + repoRoot, "clusters/dev/kustomization.yaml (a symlink to /dev/zero)", "copy the file into"}},
		{"sync --repo resource -> /dev/zero", []string{"sync", "--repo", repoRes, "--env", "dev"}, nil, 2,
			[]string{"kustomize build clusters/dev", "clusters/dev/sync.yaml (a symlink to /dev/zero): source-controller leaves symlinks out of the artifact", "commit the file itself"}},
		{"age-key --repo root -> /dev/zero", []string{"age-key", "--age-key-file", keyFile, "--repo", repoRoot, "--env", "dev"}, nil, 2,
			[]string{"--repo " + repoRoot, "clusters/dev/kustomization.yaml (a symlink to /dev/zero)", "copy the file into"}},
		{"age-key --repo .sops.yaml -> /dev/zero", []string{"age-key", "--age-key-file", keyFile, "--repo", repoSops, "--env", "dev"}, nil, 2,
			[]string{"--repo " + repoSops, ".sops.yaml (a symlink to /dev/zero)", "copy the file into"}},
		{"--age-key-file -> /dev/zero", []string{"age-key", "--age-key-file", keyZero, "--repo", repoSops, "--env", "dev"}, nil, 2,
			[]string{"--age-key-file " + keyZero + " is not a regular file (a character device): pass a regular file of at most 1 MiB"}},
		{"$SOPS_AGE_KEY_FILE -> /dev/zero", []string{"age-key", "--repo", repoSops, "--env", "dev"}, map[string]string{"SOPS_AGE_KEY_FILE": keyZero}, 2,
			[]string{"$SOPS_AGE_KEY_FILE (" + keyZero + ") is not a regular file (a character device)"}},
		{"--kubeconfig -> /dev/zero (cutover)", []string{"cutover", "--kubeconfig", kubeZero}, nil, 2,
			[]string{"kubeconfig " + kubeZero + " is not a regular file (a character device)", "pass --kubeconfig"}},
		{"--kubeconfig -> /dev/zero (controllers)", []string{"controllers", "--kubeconfig", kubeZero}, nil, 2,
			[]string{"kubeconfig " + kubeZero + " is not a regular file"}},
		{"KUBECONFIG -> /dev/zero (sync)", []string{"sync", "--repo", "../../testdata/homelab", "--env", "dev"}, map[string]string{"KUBECONFIG": kubeZero}, 2,
			[]string{"kubeconfig " + kubeZero + " is not a regular file"}},
	})
}

// TestHostileFlags: every flag is checked before a file is read or the
// cluster is contacted (there is no cluster here: a request would fail
// with another message), and a dry run refuses what the real run refuses.
func TestHostileFlags(t *testing.T) {
	t.Parallel()
	const repo = "../../testdata/homelab"
	sync := func(args ...string) []string {
		return append([]string{"sync", "--repo", repo, "--env", "dev"}, args...)
	}
	cred := "http://admin:" + secretInURL + "@git.lan/homelab/gitops.git"
	token := "https://" + secretInURL + "@git.lan/homelab/gitops.git"
	outFile := filepath.Join(t.TempDir(), "a-file")
	writeTestFile(t, outFile, "x")
	var cases []hostileCase
	for _, dry := range [][]string{nil, {"--dry-run"}} {
		suffix := ""
		if dry != nil {
			suffix = " --dry-run"
		}
		cases = append(cases,
			hostileCase{"sync --source-url with a password" + suffix, sync(append([]string{"--source-url", cred}, dry...)...), nil, 2,
				[]string{"--source-url \"http://redacted@git.lan/homelab/gitops.git\"", "credentials in the URL", "--source-secret"}},
			hostileCase{"sync --source-url with a token as user" + suffix, sync(append([]string{"--source-url", token}, dry...)...), nil, 2,
				[]string{"--source-url \"https://redacted@git.lan", "--source-secret"}},
			hostileCase{"sync --source-url file:///etc" + suffix, sync(append([]string{"--source-url", "file:///etc"}, dry...)...), nil, 2,
				[]string{`--source-url "file:///etc": does not match the GitRepository URL pattern ^(http|https|ssh)://.*$`, "pass an http://, https:// or ssh:// URL"}},
			hostileCase{"sync --source-url not a url" + suffix, sync(append([]string{"--source-url", "not a url"}, dry...)...), nil, 2,
				[]string{`--source-url "not a url": does not match`}},
			hostileCase{"sync --source-url without a host" + suffix, sync(append([]string{"--source-url", "https:///path"}, dry...)...), nil, 2,
				[]string{`--source-url "https:///path": has no host`}},
			hostileCase{"cutover --to with a password" + suffix, append([]string{"cutover", "--to", "ssh://git:" + secretInURL + "@git.lan/x.git"}, dry...), nil, 2,
				[]string{"--to \"ssh://redacted@git.lan/x.git\"", "--source-secret"}},
			hostileCase{"cutover --to file:///etc" + suffix, append([]string{"cutover", "--to", "file:///etc"}, dry...), nil, 2,
				[]string{`--to "file:///etc": does not match the GitRepository URL pattern`}},
			hostileCase{"cutover --to not a url" + suffix, append([]string{"cutover", "--to", "not a url"}, dry...), nil, 2,
				[]string{`--to "not a url"`}},
			hostileCase{"cutover --timeout 0" + suffix, append([]string{"cutover", "--timeout", "0"}, dry...), nil, 2,
				[]string{"--timeout 0s: must be positive", "pass a duration such as 5m"}},
			hostileCase{"sync --timeout -1s" + suffix, sync(append([]string{"--timeout", "-1s"}, dry...)...), nil, 2,
				[]string{"--timeout -1s: must be positive"}},
			hostileCase{"controllers --timeout 0" + suffix, append([]string{"controllers", "--timeout", "0"}, dry...), nil, 2,
				[]string{"--timeout 0s: must be positive"}},
		)
	}
	cases = append(cases,
		hostileCase{"render --namespace Flux_System!", []string{"render", "--namespace", "Flux_System!"}, nil, 2,
			[]string{`--namespace "Flux_System!": a lowercase RFC 1123 label`, "pass a namespace name such as flux-system"}},
		hostileCase{"controllers --namespace Flux_System!", []string{"controllers", "--namespace", "Flux_System!"}, nil, 2,
			[]string{`--namespace "Flux_System!"`}},
		hostileCase{"render --registry with a tag", []string{"render", "--registry", "ghcr.io/fluxcd:v1"}, nil, 2,
			[]string{`--registry "ghcr.io/fluxcd:v1"`, "pass a registry and path without a tag"}},
		hostileCase{"render --registry upper case", []string{"render", "--registry", "GHCR.io/FluxCD"}, nil, 2,
			[]string{`--registry "GHCR.io/FluxCD"`, "pass a registry"}},
		hostileCase{"render --image-pull-secret", []string{"render", "--image-pull-secret", "Pull_Secret"}, nil, 2,
			[]string{`--image-pull-secret "Pull_Secret": a lowercase RFC 1123 subdomain`, "pass the name of the image pull Secret"}},
		hostileCase{"render --cluster-domain", []string{"render", "--cluster-domain", "cluster..local"}, nil, 2,
			[]string{`--cluster-domain "cluster..local"`, "pass the cluster's DNS domain, e.g. cluster.local"}},
		hostileCase{"render --toleration-keys", []string{"render", "--toleration-keys", "ok-key,bad key!"}, nil, 2,
			[]string{`--toleration-keys "bad key!"`, "pass taint keys such as"}},
		hostileCase{"render -o json without --output-dir", []string{"render", "-o", "json"}, nil, 2,
			[]string{"-o json prints the report on stdout", "pass --output-dir DIR (they go to DIR/gotk-components.yaml)"}},
		hostileCase{"render --output-dir is a file", []string{"render", "--output-dir", outFile}, nil, 2,
			[]string{"--output-dir " + outFile + ": " + outFile + " is not a directory", "pass a directory"}},
		hostileCase{"sync --namespace", sync("--namespace", "Flux_System!"), nil, 2,
			[]string{`--namespace "Flux_System!"`, "pass a namespace name"}},
		hostileCase{"sync --root", sync("--root", "Root!"), nil, 2,
			[]string{`--root "Root!"`, "pass the name of the root Kustomization"}},
		hostileCase{"sync --source-secret", sync("--source-url", "https://git.lan/x.git", "--source-secret", "My_Secret"), nil, 2,
			[]string{`--source-secret "My_Secret"`, "pass the name of the Secret"}},
		hostileCase{"cutover --source", []string{"cutover", "--source", "Flux System"}, nil, 2,
			[]string{`--source "Flux System"`, "pass the name of the GitRepository"}},
		hostileCase{"cutover --namespace", []string{"cutover", "--namespace", "-flux"}, nil, 2,
			[]string{`--namespace "-flux"`}},
		hostileCase{"age-key --secret-name", []string{"age-key", "--env", "dev", "--secret-name", "Sops_Age"}, nil, 2,
			[]string{`--secret-name "Sops_Age"`, "pass the name of the age key Secret"}},
		hostileCase{"age-key verify --namespace", []string{"age-key", "verify", "--env", "dev", "--namespace", "Flux.System"}, nil, 2,
			[]string{`--namespace "Flux.System"`}},
	)
	runHostile(t, cases)
}

// TestComponentsDeduplicated: a component named twice in --components is
// rendered once, as --components-extra already de-duplicates.
func TestComponentsDeduplicated(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "render", "--components", "source-controller,kustomize-controller,source-controller", "--components-extra", "kustomize-controller")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, "kind: Deployment"); n != 2 {
		t.Errorf("want 2 Deployments (source- and kustomize-controller), got %d", n)
	}
}

// TestHostileRepository: a decrypting Kustomization whose spec.path leaves
// the repository is an input error naming it and its path (exit 2), not
// an incomplete run (exit 3) that hides why.
func TestHostileRepository(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	writeTestFile(t, filepath.Join(repo, "clusters/dev/apps.yaml"), agekeytest.Kustomization("apps", "../../../../etc", "sops-age"))
	keyText, _, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "age.key")
	writeTestFile(t, keyFile, keyText)
	runHostile(t, []hostileCase{
		{"age-key: spec.path escapes", []string{"age-key", "--age-key-file", keyFile, "--repo", repo, "--env", "dev"}, nil, 2,
			[]string{`Kustomization flux-system/apps (clusters/dev/apps.yaml:1): spec.path "./../../../../etc" leaves the repository`, "make it relative to the repository root"}},
		{"age-key verify: spec.path escapes", []string{"age-key", "verify", "--repo", repo, "--env", "dev"}, nil, 2,
			[]string{`spec.path "./../../../../etc" leaves the repository`}},
	})
}

// rootedRepo writes a repository whose clusters/dev renders its own root
// (the GitRepository and Kustomization flux-system) and holds a
// FluxInstance whose spec.sync names the same path, plus extra files.
func rootedRepo(t *testing.T, extra map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	writeTestFile(t, filepath.Join(repo, "clusters/dev/sync.yaml"), `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  url: https://git.example.invalid/homelab.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/dev
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`)
	writeTestFile(t, filepath.Join(repo, "bootstrap/flux-instance.yaml"), `apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: "2.9.x"
    registry: ghcr.io/fluxcd
  sync:
    kind: GitRepository
    url: https://git.example.invalid/homelab.git
    ref: refs/heads/main
    path: clusters/dev
`)
	for name, content := range extra {
		writeTestFile(t, filepath.Join(repo, name), content)
	}
	return repo
}

// TestHostileFluxInstance: a --flux-instance that declares no root — a
// missing file, a directory, a symlink, a file of another kind — and one
// given where the root directory renders the root itself (the flag would
// have no effect), are exit 2 naming the file and the fix, for every
// command that takes the flag, before the cluster is contacted (there is
// none: a request would fail with another message).
func TestHostileFluxInstance(t *testing.T) {
	t.Parallel()
	repo := rootedRepo(t, nil)
	if err := os.Symlink("flux-instance.yaml", filepath.Join(repo, "bootstrap/link.yaml")); err != nil {
		t.Fatal(err)
	}
	fix := "or drop --flux-instance"
	bad := []struct {
		name, file string
		want       []string
	}{
		{"a missing file", "bootstrap/nope.yaml", []string{"--flux-instance bootstrap/nope.yaml: no such file in the repository", fix}},
		{"a directory", "bootstrap", []string{"--flux-instance bootstrap is a directory", fix}},
		{"a symlink", "bootstrap/link.yaml", []string{"--flux-instance bootstrap/link.yaml is a symlink", "commit the file itself"}},
		{"a file of another kind", "clusters/dev/sync.yaml", []string{"--flux-instance clusters/dev/sync.yaml: no FluxInstance spec.sync in that file", fix}},
		{"a FluxInstance where the root is rendered", "bootstrap/flux-instance.yaml", []string{"--flux-instance bootstrap/flux-instance.yaml has no effect: clusters/dev renders the root itself (Kustomization flux-system/flux-system)", "drop --flux-instance"}},
	}
	var cases []hostileCase
	for _, b := range bad {
		for _, cmd := range [][]string{
			{"check"},
			{"status"},
			{"sync", "--kubeconfig", "/nonexistent/kubeconfig"},
			{"up", "--kubeconfig", "/nonexistent/kubeconfig"},
		} {
			cases = append(cases, hostileCase{cmd[0] + ": " + b.name, append(cmd, "--repo", repo, "--env", "dev", "--flux-instance", b.file), nil, 2, b.want})
		}
	}
	runHostile(t, cases)
	// The control: without the flag the repository checks (its root is
	// rendered), so the refusals above are the flag's.
	if r := runCLI(t, "check", "--repo", repo, "--env", "dev", "-q"); r.code != 0 {
		t.Fatalf("check without --flux-instance: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// allocated is the memory f allocates (runtime.MemStats.TotalAlloc: every
// byte, however short-lived, so a bound on it bounds the peak).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// laughs is a "billion laughs" YAML alias bomb under key at indent: level
// i is ten aliases of level i-1, so decoding it visits more than 10^9 nodes.
func laughs(key, indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s:\n%s  l0: &l0 [lol]\n", indent, key, indent)
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "%s  l%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// TestHostileMemory: a policy file past its limit (22 MB of valid YAML,
// which once took 930 MB to decode) and a YAML alias bomb in a
// HelmRelease's values and in .bootstrap.yaml are exit 2 at once, naming
// the file, the line and the limit (a bomb in a file no Kustomization
// builds refuses nothing), and allocate a small fraction of what expanding them would (which crashed
// the check: kustomize expands every alias in memory).
func TestHostileMemory(t *testing.T) {
	t.Parallel()
	var policy strings.Builder
	policy.WriteString("version: 1\nprerequisites:\n  declared:\n")
	for policy.Len() < 22<<20 {
		policy.WriteString("    - {kind: ConfigMap, namespace: flux-system, name: cluster-vars, keys: [A, B, C, D], createdBy: a script at bootstrap}\n")
	}
	bigPolicy := rootedRepo(t, map[string]string{".bootstrap.yaml": policy.String()})
	release := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: default\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: app\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n"
	bombValues := rootedRepo(t, map[string]string{"clusters/dev/app.yaml": release + laughs("values", "  ")})
	bombPolicy := rootedRepo(t, map[string]string{".bootstrap.yaml": "version: 1\n" + laughs("x-anchors", "")})
	bombAside := rootedRepo(t, map[string]string{"docs/example.yaml": laughs("values", "")})
	const limit = 256 << 20
	for _, tc := range []hostileCase{
		{"check: a 22 MB .bootstrap.yaml", []string{"check", "--repo", bigPolicy, "--env", "dev"}, nil, 2,
			[]string{".bootstrap.yaml is 2", "more than the 1048576-byte limit", "at most 1 MiB", "the check policy, docs/policy.md"}},
		// Issue 45 item 2 (exit 2 before): a root directory that does not
		// build is the repository's defect, exit 1, its [build] failure
		// at the bomb's line; the file is left out, never expanded.
		{"check: a billion laughs in a HelmRelease's values", []string{"check", "--repo", bombValues, "--env", "dev"}, nil, 1,
			[]string{"[build] clusters/dev/app.yaml:24: the root directory clusters/dev does not build", "clusters/dev/app.yaml:24: its aliases expand the document to 3,580,24", "excessive aliasing", "kustomize, here and in kustomize-controller, would expand every alias in memory", "write the values out"}},
		{"sync: a billion laughs in a HelmRelease's values", []string{"sync", "--repo", bombValues, "--env", "dev", "--kubeconfig", "/nonexistent/kubeconfig"}, nil, 2,
			[]string{"clusters/dev/app.yaml:24: its aliases expand"}},
		{"check: a billion laughs in .bootstrap.yaml", []string{"check", "--repo", bombPolicy, "--env", "dev"}, nil, 2,
			[]string{".bootstrap.yaml:12: its aliases expand", "excessive aliasing", "write the policy out without aliases"}},
		// Review item 5: this case asserted the defect (exit 2 for a file
		// nothing reads); a file no build reads refuses nothing, and is
		// still never expanded (the allocation bound below).
		{"check: a billion laughs in a file no Kustomization builds", []string{"check", "--repo", bombAside, "--env", "dev"}, nil, 0, nil},
	} {
		n := allocated(func() { runHostile(t, []hostileCase{tc}) })
		t.Logf("%s: allocated %d KiB", tc.name, n>>10)
		if n > limit {
			t.Errorf("%s: allocated %d MiB, more than %d MiB", tc.name, n>>20, limit>>20)
		}
	}
}

// TestHostileRootAndBound (issue 45 item 7): --root naming a Kustomization
// nothing renders is exit 2 naming the root the path renders (it was
// taken as a root whose source nothing reads: nothing built, exit 3); a
// manifest over the read bound is said to be over it, with the bound and
// what raises it (nothing), never "no such file or directory".
func TestHostileRootAndBound(t *testing.T) {
	t.Parallel()
	repo := rootedRepo(t, map[string]string{
		"clusters/dev/apps.yaml":          "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps/web\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"apps/web/kustomization.yaml":     "resources:\n  - small.yaml\n  - big.yaml\n",
		"apps/web/small.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\n  namespace: default\n",
		"apps/web/big.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  blob: \"" + strings.Repeat("x", 5<<20) + "\"\n",
		"bootstrap/flux-instance.yaml":    "# no FluxInstance here\n",
		"clusters/dev/kustomization.yaml": "resources:\n  - sync.yaml\n  - apps.yaml\n",
	})
	runHostile(t, []hostileCase{
		{"check --root naming a Kustomization nothing renders", []string{"check", "--repo", repo, "--env", "dev", "--root", "cluster"}, nil, 2,
			[]string{"the root Kustomization flux-system/cluster: clusters/dev renders no such Kustomization", "it renders Kustomization flux-system/flux-system, applying clusters/dev: pass --namespace flux-system --root flux-system"}},
		{"check: a manifest over the read bound", []string{"check", "--repo", repo, "--env", "dev"}, nil, 0,
			[]string{`[unread] apps/web/kustomization.yaml:3: resources entry "big.yaml" is a file over this tool's read bound: apps/web/big.yaml is larger than 4194304 bytes (4 MiB)`, "no flag or policy raises the bound", "left out of the build of Kustomization flux-system/apps"}},
	})
}
