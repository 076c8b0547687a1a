package fluxobj

import (
	"net/url"
	"strings"
)

// defaultPorts are the ports a source URL's scheme implies: written or
// not, source-controller reaches the same server.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22"}

// SourceURL is a source's URL (a GitRepository's or OCIRepository's
// spec.url, a FluxInstance's spec.sync.url) as the repository it reaches:
// scheme and host lower-cased, a default port, the user (ssh's git@, never
// a credential the input rules let through) and a fragment dropped, the
// path without a trailing "/" or ".git", and git's scp-like form
// user@host:owner/repo written as ssh://host/owner/repo. Two URLs of one
// repository give the same SourceURL; "" for an empty or unparsable one.
func SourceURL(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	// git's scp-like syntax: a ":" before any "/" and no scheme
	// (git-clone(1) "GIT URLS").
	if !strings.Contains(s, "://") {
		if i := strings.Index(s, ":"); i > 0 && !strings.Contains(s[:i], "/") {
			s = "ssh://" + s[:i] + "/" + strings.TrimPrefix(s[i+1:], "/")
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && p != defaultPorts[scheme] {
		host += ":" + p
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	p = strings.TrimRight(strings.TrimSuffix(p, ".git"), "/")
	out := scheme + "://" + host + p
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// SameSourceURL says whether two source URLs reach the same repository
// (SourceURL); an empty or unparsable URL is the same as none.
func SameSourceURL(a, b string) bool {
	na := SourceURL(a)
	return na != "" && na == SourceURL(b)
}
