// Package serve is --serve: this machine as the temporary Git source of a
// cold bring-up (a snapshot of the branch, git http-backend over TLS, a
// detached serving process and its state, stopped after the cutover).
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/internal/wait"
)

// Run is the serving process (`bootstrap serve run`): it takes dir's lock,
// reads the handoff from stdin, serves the snapshot on ln until ctx ends
// (SIGTERM from `serve stop` or a replacing --serve), --serve-for passes,
// or the GitRepository, once seen reading this source, reads another URL
// (cutover, or a sync to another source). It then removes its snapshot and
// state. Log lines go to logw; nothing secret is logged.
func Run(ctx context.Context, dir string, stdin io.Reader, ln net.Listener, logw io.Writer) error {
	logger := log.New(logw, "", log.LstdFlags|log.LUTC)
	l, ok, err := tryLock(dir)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("another server already serves from %s", dir)
	}
	defer l.release()
	b, err := safeio.ReadLimited(stdin, 1<<20)
	if err != nil {
		return fmt.Errorf("read handoff: %w", err)
	}
	var h handoff
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("read handoff: %w", err)
	}
	st := h.State
	st.PID = os.Getpid()
	defer cleanup(dir, st, logger)
	snap := &Snapshot{Bare: filepath.Join(st.Repo, RepoName+".git"), Name: RepoName}
	var handler http.Handler
	var err2 error
	if st.OCI() {
		handler, err2 = ociServe(&st, h.Creds.Token)
	} else {
		handler, err2 = Handler(snap, h.Creds.Token)
	}
	if err2 != nil {
		return err2
	}
	tlsCfg, err := h.Creds.TLSConfig()
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: logged(handler, logger), TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	logger.Printf("serving %s (%s) at %s for %s %s/%s until %s", st.Revision, st.Origin, st.URL, st.kind(), st.Namespace, st.Name, st.Until.Format(time.RFC3339))

	ctx, cancel := context.WithDeadline(ctx, st.Until)
	defer cancel()
	moved := make(chan string, 1)
	go func() { moved <- watchSource(ctx, h, logger) }()
	var why string
	select {
	case <-ctx.Done():
		why = "stopped"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "--serve-for ended at " + st.Until.Format(time.RFC3339)
		}
	case why = <-moved:
	case err := <-served:
		why = fmt.Sprintf("server ended: %v", err)
	}
	logger.Printf("stopping: %s", why)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// AnnTemporaryURL is the annotation that records a GitRepository's
// temporary source (internal/rootsync writes it; it is kept while a cutover may
// still roll back).
const AnnTemporaryURL = "bootstrap.homelab-ops.github.io/temporary-url"

// watchSource returns once the GitRepository neither reads this source nor
// records it as its temporary source, after it did, or when it never did within the arm time; "" when ctx ended
// first. Watches, not polls; an unreachable API server is retried by the
// watch's own re-list.
func watchSource(ctx context.Context, h handoff, logger *log.Logger) string {
	c, err := kube.Client(h.Kube.REST())
	if err != nil {
		logger.Printf("no cluster client (%v): serving until --serve-for or `bootstrap serve stop`", err)
		<-ctx.Done()
		return ""
	}
	url := h.State.URL
	id := fmt.Sprintf("%s %s/%s", h.State.kind(), h.State.Namespace, h.State.Name)
	// until waits for the source (of the state's kind) to meet cond on its
	// spec.url and temporary-source record.
	until := func(ctx context.Context, cond func(url, tmp string) bool) (string, error) {
		if h.State.OCI() {
			o, err := wait.For(ctx, c, &sourcev1.OCIRepositoryList{}, h.State.Namespace, h.State.Name, func(o *sourcev1.OCIRepository) (bool, string) {
				return cond(o.Spec.URL, o.Annotations[AnnTemporaryURL]), "spec.url " + o.Spec.URL
			})
			if err != nil {
				return "", err
			}
			return o.Spec.URL, nil
		}
		g, err := wait.For(ctx, c, &sourcev1.GitRepositoryList{}, h.State.Namespace, h.State.Name, func(g *sourcev1.GitRepository) (bool, string) {
			return cond(g.Spec.URL, g.Annotations[AnnTemporaryURL]), "spec.url " + g.Spec.URL
		})
		if err != nil {
			return "", err
		}
		return g.Spec.URL, nil
	}
	actx, cancel := context.WithTimeout(ctx, h.Arm)
	_, err = until(actx, func(u, _ string) bool { return u == url })
	cancel()
	if ctx.Err() != nil {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("%s never read %s within %s: %v", id, url, h.Arm, err)
	}
	logger.Printf("%s reads this source", id)
	// A cutover in progress switches spec.url but keeps the temporary
	// record until it hands the object back: it may still roll back here.
	now, err := until(ctx, func(u, tmp string) bool { return u != url && tmp != url })
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s reads %s now, not this source", id, now)
}

// kind is the served source's kind (GitRepository for older states).
func (s *State) kind() string {
	if s.Kind == "" {
		return sourcev1.GitRepositoryKind
	}
	return s.Kind
}

// ociServe is the handler of an OCI root's serving process: the tree the
// parent extracted, built into the artifact it proved (the same revision,
// or the process refuses to serve another).
func ociServe(st *State, token string) (http.Handler, error) {
	tag, _, _ := strings.Cut(st.Revision, "@")
	h, rev, err := OCIHandler(treeDir(st.Repo), tag, token, ociMeta(st))
	if err != nil {
		return nil, err
	}
	if rev != st.Revision {
		return nil, fmt.Errorf("serve: the artifact built here is %s, not the %s the run proved", rev, st.Revision)
	}
	return h, nil
}

// cleanup removes the snapshot, and the state file when it is still this
// process's (a replacing server may have written its own).
func cleanup(dir string, st State, logger *log.Logger) {
	if cur, err := ReadState(dir); err == nil && cur != nil && cur.PID == st.PID {
		_ = os.Remove(filepath.Join(dir, stateFile))
	}
	if st.Repo != "" {
		if err := os.RemoveAll(st.Repo); err != nil {
			logger.Printf("remove snapshot %s: %v", st.Repo, err)
		}
	}
	logger.Printf("stopped")
}

// logged logs each request's method, path and status; never headers.
func logged(h http.Handler, logger *log.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &status{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		logger.Printf("%s %s %s %d", r.RemoteAddr, r.Method, r.URL.Path, rec.code)
	})
}

type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush passes through to the writer (git's pack stream).
func (s *status) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
