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
	handler, err := Handler(snap, h.Creds.Token)
	if err != nil {
		return err
	}
	tlsCfg, err := h.Creds.TLSConfig()
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: logged(handler, logger), TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	logger.Printf("serving %s (%s) at %s for GitRepository %s/%s until %s", st.Revision, st.Origin, st.URL, st.Namespace, st.Name, st.Until.Format(time.RFC3339))

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
	actx, cancel := context.WithTimeout(ctx, h.Arm)
	_, err = wait.For(actx, c, &sourcev1.GitRepositoryList{}, h.State.Namespace, h.State.Name, func(g *sourcev1.GitRepository) (bool, string) {
		return g.Spec.URL == url, "spec.url " + g.Spec.URL
	})
	cancel()
	if ctx.Err() != nil {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("GitRepository %s/%s never read %s within %s: %v", h.State.Namespace, h.State.Name, url, h.Arm, err)
	}
	logger.Printf("GitRepository %s/%s reads this source", h.State.Namespace, h.State.Name)
	// A cutover in progress switches spec.url but keeps the temporary
	// record until it hands the object back: it may still roll back here.
	g, err := wait.For(ctx, c, &sourcev1.GitRepositoryList{}, h.State.Namespace, h.State.Name, func(g *sourcev1.GitRepository) (bool, string) {
		return g.Spec.URL != url && g.Annotations[AnnTemporaryURL] != url, "spec.url " + g.Spec.URL
	})
	if err != nil {
		return ""
	}
	return fmt.Sprintf("GitRepository %s/%s reads %s now, not this source", g.Namespace, g.Name, g.Spec.URL)
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
