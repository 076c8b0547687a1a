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

// TestBinding: a request made without a context ends when the command's
// context does; after Detach (a rollback) requests go through again.
func TestBinding(t *testing.T) {
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
	b := NewBinding(ctx)
	b.Wrap(cfg)
	ctx = WithBinding(ctx, b)
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
	// After Detach (a rollback), requests go through, also those made
	// without the detached context (an informer's).
	_ = Detach(ctx)
	resp, err := hc.Get(srv.URL + "/")
	if err != nil {
		t.Fatalf("detached request: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("detached request body %q", body)
	}
}
