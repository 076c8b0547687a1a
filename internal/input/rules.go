package input

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The rules below return what is wrong with a value and the fix, without
// the flag: the flag value types (value.go) name the flag and the source
// (command line, --config, environment) themselves; the Valid* wrappers
// are for callers that check a value outside a flag set.

func rule(errs []string, fix string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", strings.Join(errs, "; "), fix)
}

// namespaceRule: a DNS-1123 label, as the API server requires of a namespace.
func namespaceRule(v string) error {
	return rule(validation.IsDNS1123Label(v), "pass a namespace name such as flux-system")
}

// nameRule: an object name, a DNS-1123 subdomain (Secrets, GitRepositories,
// Kustomizations); what says which object, for the fix.
func nameRule(v, what string) error {
	return rule(validation.IsDNS1123Subdomain(v), "pass the name of the "+what+", e.g. flux-system")
}

// clusterDomainRule: a DNS-1123 subdomain such as cluster.local.
func clusterDomainRule(v string) error {
	return rule(validation.IsDNS1123Subdomain(v), "pass the cluster's DNS domain, e.g. cluster.local")
}

// registryRule: what image names are prefixed with, a registry host (a
// DNS-1123 subdomain or IP, optionally with a port) and a repository path,
// as the distribution reference grammar defines it, with no tag or digest.
func registryRule(v string) error {
	fix := "pass a registry and path without a tag, e.g. ghcr.io/fluxcd or registry.lan:5000/fluxcd"
	if v == "" {
		return rule([]string{"must not be empty"}, fix)
	}
	named, err := reference.ParseNormalizedNamed(v + "/source-controller")
	if err != nil {
		return rule([]string{"not an image repository prefix (" + err.Error() + ")"}, fix)
	}
	if _, tagged := named.(reference.Tagged); tagged {
		return rule([]string{"carries a tag"}, fix)
	}
	return nil
}

// tolerationKeyRule: a taint key is a qualified name (an optional DNS
// subdomain prefix and a name), as the API server validates a toleration's key.
func tolerationKeyRule(k string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		errs = append([]string{"a taint key must be a qualified name ([DNS-subdomain prefix/]name)"}, errs...)
		return rule(errs, "pass taint keys such as node-role.kubernetes.io/control-plane, comma-separated")
	}
	return nil
}

// gitURLPattern is the GitRepository CRD's pattern for spec.url
// (source.toolkit.fluxcd.io/v1 GitRepositorySpec.URL).
var gitURLPattern = regexp.MustCompile(`^(http|https|ssh)://.*$`)

// gitURLRule: a URL source-controller accepts in spec.url: http, https or
// ssh, with a host, and without a password (or, for http and https, any
// user info: a token in the user name is a credential too). Credentials
// belong in a Secret (--source-secret), never in the URL: the URL is
// stored in the object, its annotations and every report.
func gitURLRule(v string) error {
	fix := "pass an http://, https:// or ssh:// URL of the Git repository, e.g. https://git.lan/homelab/gitops.git"
	if !gitURLPattern.MatchString(v) {
		return fmt.Errorf("does not match the GitRepository URL pattern %s: %s", gitURLPattern, fix)
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a parseable URL: %s", fix)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("has no host: %s", fix)
	}
	if u.User != nil {
		_, hasPassword := u.User.Password()
		if hasPassword || u.Scheme != "ssh" {
			return fmt.Errorf("credentials in the URL would be stored in the GitRepository and shown in every report: remove them from the URL and put them in a Secret (username/password, or bearerToken) named with --source-secret")
		}
	}
	return nil
}

func valid(flag, shown string, err error) error {
	if err == nil {
		return nil
	}
	return verify.InputErrorf("%s %q: %v", flag, shown, err)
}

// ValidNamespace checks a namespace given as flag.
func ValidNamespace(flag, v string) error { return valid(flag, v, namespaceRule(v)) }

// ValidName checks an object name given as flag; what names the object.
func ValidName(flag, v, what string) error { return valid(flag, v, nameRule(v, what)) }

// ValidOptionalName is ValidName for a flag whose empty value means "none".
func ValidOptionalName(flag, v, what string) error {
	if v == "" {
		return nil
	}
	return ValidName(flag, v, what)
}

// ValidClusterDomain checks a cluster DNS domain given as flag.
func ValidClusterDomain(flag, v string) error { return valid(flag, v, clusterDomainRule(v)) }

// ValidRegistry checks an image registry prefix given as flag.
func ValidRegistry(flag, v string) error { return valid(flag, v, registryRule(v)) }

// ValidTolerationKeys checks taint keys given as flag.
func ValidTolerationKeys(flag string, keys []string) error {
	for _, k := range keys {
		if err := tolerationKeyRule(k); err != nil {
			return valid(flag, k, err)
		}
	}
	return nil
}

// ValidGitURL checks a Git URL given as flag; the value is shown with any
// credential redacted.
func ValidGitURL(flag, v string) error { return valid(flag, RedactURLs(v), gitURLRule(v)) }

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
func RedactReport(r *verify.Report) { r.Rewrite(RedactURLs) }
