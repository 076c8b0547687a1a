package serve

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
)

// Handler serves the one bare repository snap over Git's smart HTTP,
// read-only, through Git's own `git http-backend`: a request without the
// token gets 401, a push 403, and any path but the repository's two
// upload-pack endpoints 404. No other repository, file or listing is served.
func Handler(snap *Snapshot, token string) (http.Handler, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("serve: git not on PATH (install git): %w", err)
	}
	backend := &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Root: "/",
		Dir:  filepath.Dir(snap.Bare),
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(snap.Bare),
			"GIT_HTTP_EXPORT_ALL=1",
			// Hermetic: no user or system configuration; pushes off even
			// for an authenticated user (REMOTE_USER is never set).
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + filepath.Dir(snap.Bare),
			"GIT_CONFIG_COUNT=3",
			"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=false",
			"GIT_CONFIG_KEY_1=http.uploadpack", "GIT_CONFIG_VALUE_1=true",
			"GIT_CONFIG_KEY_2=http.getanyfile", "GIT_CONFIG_VALUE_2=false",
		},
	}
	prefix := "/" + snap.Name + ".git"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(Username)) != 1 || subtle.ConstantTimeCompare([]byte(pass), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="bootstrap serve"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		switch {
		case r.URL.Path == prefix+"/info/refs" && r.Method == http.MethodGet && r.URL.Query().Get("service") == "git-upload-pack":
		case r.URL.Path == prefix+"/git-upload-pack" && r.Method == http.MethodPost:
		case r.URL.Path == prefix+"/info/refs" && r.URL.Query().Get("service") == "git-receive-pack",
			r.URL.Path == prefix+"/git-receive-pack":
			http.Error(w, "this temporary source is read-only: push to the repository the operator serves from", http.StatusForbidden)
			return
		default:
			http.NotFound(w, r)
			return
		}
		backend.ServeHTTP(w, r)
	}), nil
}
