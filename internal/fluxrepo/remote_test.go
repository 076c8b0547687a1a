package fluxrepo

import (
	"errors"
	"strings"
	"testing"
)

// TestRemoteForm: the one classifier of kustomization entries, as the
// offline holes and --fetch-remote both read it (kustomize's loader: an
// http(s) file is a GET, a repository spec a clone; a generator file is
// only ever a file).
func TestRemoteForm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path string
		dir  bool // a resources/components/bases entry
		want remoteKind
	}{
		{"https://raw.githubusercontent.com/org/repo/v1/deploy.yaml", true, remoteFile},
		{"https://example.invalid/.github/crds.yaml", true, remoteFile},
		{"https://github.com/org/repo//deploy/base?ref=v1.2.0", true, remoteBase},
		{"https://example.invalid/org/repo?version=v1", true, remoteBase},
		{"https://example.invalid/org/repo.git/deploy", true, remoteBase},
		{"https://github.com/org/repo", true, remoteBase},
		{"github.com/org/repo//path?ref=main", true, remoteBase},
		{"git::https://git.example.invalid/org/repo//base?ref=v1", true, remoteBase},
		{"ssh://git@git.example.invalid/org/repo.git//base", true, remoteBase},
		{"git@github.com:org/repo.git", true, remoteBase},
		{"../base", true, remoteNone},
		{"deploy.yaml", true, remoteNone},
		{"/etc/base", true, remoteFile},
		// A generator file: a file, whatever it spells.
		{"https://example.invalid/config/app", false, remoteFile},
		{"github.com/org/repo//env?ref=main", false, remoteFile},
		{"app.env", false, remoteNone},
	} {
		if got := remoteForm(entry{path: tt.path, dir: tt.dir}); got != tt.want {
			t.Errorf("remoteForm(%q, dir %t) = %d, want %d", tt.path, tt.dir, got, tt.want)
		}
	}
}

// TestRedactURL: no credential of a URL reaches an error: a password
// (net/url's Redacted), a token spelled as the user, the userinfo repeated
// elsewhere in the message; a URL that does not parse has what stands
// between :// and @ masked; a URL without credentials is left as it is.
func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url, msg, want string
		secret         string
	}{
		{"https://user:tok@host/x", "GET https://user:tok@host/x: refused", "GET https://user:xxxxx@host/x: refused", "tok"},
		{"https://user:tok@host/x", "clone https://user:tok@host/x.git: exit 128", "clone https://user:xxxxx@host/x.git: exit 128", "tok"},
		{"https://tok@host/x", "GET https://tok@host/x: refused", "GET https://xxxxx@host/x: refused", "tok"},
		{"git@host:x", "clone git@host:x: no route", "clone git@host:x: no route", ""},
		{"%zz://u:secret@h/x", "GET %zz://u:secret@h/x: bad", "GET %zz://xxxxx@h/x: bad", "secret"},
		{"not a url at all %zz", "read not a url at all %zz: bad", "read not a url at all %zz: bad", ""},
		{"https://host/x", "GET https://host/x: 404", "GET https://host/x: 404", ""},
	} {
		got := redactURL(errors.New(tt.msg), tt.url).Error()
		if got != tt.want || tt.secret != "" && strings.Contains(got, tt.secret) {
			t.Errorf("redactURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
