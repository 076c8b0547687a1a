package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransient(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, refused := net.Dial("tcp", addr)
	if refused == nil {
		t.Skip("a closed port accepted a connection")
	}
	gr := schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("patch: %w", refused), true},
		{apierrors.NewServiceUnavailable("restarting"), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewServerTimeout(gr, "patch", 1), true},
		{nil, false},
		{apierrors.NewForbidden(gr, "a", errors.New("no")), false},
		{apierrors.NewNotFound(gr, "a"), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}
