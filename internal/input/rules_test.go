package input

import (
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func TestGitURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		ok   bool
		want string
	}{
		{"https://git.lan/homelab/gitops.git", true, ""},
		{"http://10.0.0.1:3000/homelab/gitops.git", true, ""},
		{"ssh://git@github.com/homelab/gitops.git", true, ""},
		{"ssh://git:pw@github.com/x.git", false, "ssh://redacted@github.com"},
		{"https://user:pw@git.lan/x.git", false, "--source-secret"},
		{"https://ghp_token@git.lan/x.git", false, "https://redacted@git.lan"},
		{"file:///etc", false, "does not match the GitRepository URL pattern"},
		{"not a url", false, "does not match"},
		{"git@github.com:homelab/gitops.git", false, "does not match"},
		{"https:///x", false, "has no host"},
		{"https://git.lan:notaport/x", false, "not a parseable URL"},
		{"", false, "does not match"},
	} {
		err := ValidGitURL("--source-url", tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.url, err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !verify.IsInput(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "ghp_token") {
			t.Errorf("%q: %v; want an input error saying %q without the credential", tc.url, err, tc.want)
		}
	}
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"reads https://user:pw@git.lan/x.git now":       "reads https://redacted@git.lan/x.git now",
		"token https://tok@git.lan/x":                   "token https://redacted@git.lan/x",
		"ssh://git@github.com/x.git":                    "ssh://git@github.com/x.git",
		"ssh://git:pw@github.com/x.git":                 "ssh://redacted@github.com/x.git",
		`"url":"http://a:b@h/x","y":"mail@example.org"`: `"url":"http://redacted@h/x","y":"mail@example.org"`,
		"no url here": "no url here",
		"two: http://a:b@h1/ and https://c:d@h2/": "two: http://redacted@h1/ and https://redacted@h2/",
	} {
		if got := RedactURLs(in); got != want {
			t.Errorf("RedactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactReport(t *testing.T) {
	const u = "https://admin:pw-secret@git.lan/x.git"
	r := verify.NewReport("cutover")
	r.Error = "read " + u
	r.Warn("warning " + u)
	r.Add(verify.Check{ID: "x", Title: u, Message: u, Evidence: []string{"temporary-url=" + u}})
	r.Facts["temporarySource"] = u
	r.Objects = []verify.ObjectChange{{Object: u}}
	RedactReport(r)
	var b strings.Builder
	if err := verify.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := verify.WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := verify.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "pw-secret") || !strings.Contains(b.String(), "https://redacted@git.lan/x.git") {
		t.Errorf("report not redacted:\n%s", b.String())
	}
}

func TestNamesAndDurations(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"namespace", ValidNamespace("--namespace", "Flux_System!"), "RFC 1123 label"},
		{"namespace too long", ValidNamespace("--namespace", strings.Repeat("a", 64)), "63"},
		{"name", ValidName("--secret-name", "Sops_Age", "age key Secret"), "RFC 1123 subdomain"},
		{"cluster domain", ValidClusterDomain("--cluster-domain", "-x.local"), "RFC 1123 subdomain"},
		{"registry tag", ValidRegistry("--registry", "ghcr.io/fluxcd:latest"), "pass a registry"},
		{"registry empty", ValidRegistry("--registry", ""), "must not be empty"},
		{"toleration", ValidTolerationKeys("--toleration-keys", []string{"a b"}), "qualified name"},
	} {
		if tc.err == nil || !verify.IsInput(tc.err) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an input error saying %q", tc.name, tc.err, tc.want)
		}
	}
	for _, err := range []error{
		ValidNamespace("--namespace", "flux-system"), ValidName("--root", "flux-system", "root"), ValidOptionalName("--x", "", "x"),
		ValidClusterDomain("--cluster-domain", "cluster.local"), ValidRegistry("--registry", "ghcr.io/fluxcd"),
		ValidRegistry("--registry", "registry.lan:5000/mirror/fluxcd"), ValidRegistry("--registry", "fluxcd"),
		ValidTolerationKeys("--toleration-keys", []string{"node-role.kubernetes.io/control-plane", "dedicated"}),
	} {
		if err != nil {
			t.Errorf("valid value refused: %v", err)
		}
	}
}
