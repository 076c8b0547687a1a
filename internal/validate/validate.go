// Package validate holds the rules every command applies to its flags
// before it reads a file or contacts a cluster: Kubernetes names with
// apimachinery's own validation functions, Git URLs with the pattern the
// GitRepository CRD enforces, durations that must be positive. Each failure
// is an input error (exit 2) that names the flag, the rule and the fix, and
// never echoes a credential.
package validate

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/homelab-ops/bootstrap/internal/gate"
)

func fail(flag, value string, errs []string, fix string) error {
	return gate.InputErrorf("%s %q: %s: %s", flag, value, strings.Join(errs, "; "), fix)
}

// Namespace is a DNS-1123 label, as the API server requires of a namespace.
func Namespace(flag, v string) error {
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fail(flag, v, errs, "pass a namespace name such as flux-system")
	}
	return nil
}

// Name is an object name: a DNS-1123 subdomain (Secrets, GitRepositories,
// Kustomizations). what says which object, for the fix.
func Name(flag, v, what string) error {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return fail(flag, v, errs, "pass the name of the "+what+", e.g. flux-system")
	}
	return nil
}

// OptionalName is Name for a flag whose empty value means "none".
func OptionalName(flag, v, what string) error {
	if v == "" {
		return nil
	}
	return Name(flag, v, what)
}

// ClusterDomain is a DNS-1123 subdomain such as cluster.local.
func ClusterDomain(flag, v string) error {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return fail(flag, v, errs, "pass the cluster's DNS domain, e.g. cluster.local")
	}
	return nil
}

// Registry is what image names are prefixed with: a registry host (a
// DNS-1123 subdomain or IP, optionally with a port) and a repository path,
// as the distribution reference grammar defines it, with no tag or digest.
func Registry(flag, v string) error {
	fix := "pass a registry and path without a tag, e.g. ghcr.io/fluxcd or registry.lan:5000/fluxcd"
	if v == "" {
		return fail(flag, v, []string{"must not be empty"}, fix)
	}
	named, err := reference.ParseNormalizedNamed(v + "/source-controller")
	if err != nil {
		return fail(flag, v, []string{"not an image repository prefix (" + err.Error() + ")"}, fix)
	}
	if _, tagged := named.(reference.Tagged); tagged {
		return fail(flag, v, []string{"carries a tag"}, fix)
	}
	return nil
}

// TolerationKeys are taint keys: qualified names (an optional DNS subdomain
// prefix and a name), as the API server validates a toleration's key.
func TolerationKeys(flag string, keys []string) error {
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			errs = append([]string{"a taint key must be a qualified name ([DNS-subdomain prefix/]name)"}, errs...)
			return fail(flag, k, errs, "pass taint keys such as node-role.kubernetes.io/control-plane, comma-separated")
		}
	}
	return nil
}

// gitURLPattern is the GitRepository CRD's pattern for spec.url
// (source.toolkit.fluxcd.io/v1 GitRepositorySpec.URL).
var gitURLPattern = regexp.MustCompile(`^(http|https|ssh)://.*$`)

// GitURL is a URL source-controller accepts in spec.url: http, https or
// ssh, with a host, and without a password (or, for http and https, any
// user info: a token in the user name is a credential too). Credentials
// belong in a Secret (--source-secret), never in the URL: the URL is
// stored in the object, its annotations and every report.
func GitURL(flag, v string) error {
	shown := RedactURLs(v)
	fix := "pass an http://, https:// or ssh:// URL of the Git repository, e.g. https://git.lan/homelab/gitops.git"
	if !gitURLPattern.MatchString(v) {
		return gate.InputErrorf("%s %q: does not match the GitRepository URL pattern %s: %s", flag, shown, gitURLPattern, fix)
	}
	u, err := url.Parse(v)
	if err != nil {
		return gate.InputErrorf("%s %q: not a parseable URL: %s", flag, shown, fix)
	}
	if u.Host == "" || u.Hostname() == "" {
		return gate.InputErrorf("%s %q: has no host: %s", flag, shown, fix)
	}
	if u.User != nil {
		_, hasPassword := u.User.Password()
		if hasPassword || u.Scheme != "ssh" {
			return gate.InputErrorf("%s %q: credentials in the URL would be stored in the GitRepository and shown in every report: remove them from the URL and put them in a Secret (username/password, or bearerToken) named with --source-secret", flag, shown)
		}
	}
	return nil
}

// urlUserinfo matches the user info of a URL in free text.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@\s"']*)@`)

// RedactURLs replaces the user info of every URL in s, except an ssh user
// name without a password (ssh://git@host is an account name, not a secret).
func RedactURLs(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return urlUserinfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := urlUserinfo.FindStringSubmatch(m)
		scheme, info := sub[1], sub[2]
		if strings.EqualFold(scheme, "ssh://") && !strings.Contains(info, ":") {
			return m
		}
		return scheme + "redacted@"
	})
}

// RedactReport applies RedactURLs to every text of a report: the error,
// warnings, each check's title, message and evidence, the facts and the
// objects. It is the last line of defence before the report leaves the
// process, for URLs read back from a cluster.
func RedactReport(r *gate.Report) { r.Rewrite(RedactURLs) }
