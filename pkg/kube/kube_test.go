package kube

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestBindContext: a request made without a context ends when the
// command's context does; a detached one (a rollback) still goes through.
func TestBindContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	cfg := &rest.Config{Host: srv.URL}
	BindContext(ctx, cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errInterrupted := errors.New("interrupted")
	time.AfterFunc(200*time.Millisecond, func() { cancel(errInterrupted) })
	start := time.Now()
	_, err = hc.Get(srv.URL + "/hang") // no context of its own
	if !errors.Is(err, errInterrupted) || time.Since(start) > 5*time.Second {
		t.Fatalf("hanging request: %v after %s, want the command's cause at once", err, time.Since(start))
	}
	if _, err := hc.Get(srv.URL + "/"); !errors.Is(err, errInterrupted) {
		t.Fatalf("request after the interrupt: %v", err)
	}
	req, _ := http.NewRequestWithContext(Detach(ctx), http.MethodGet, srv.URL+"/", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("detached request: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("detached request body %q", b)
	}
}
