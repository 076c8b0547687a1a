package rootsync

import (
	"errors"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestNotInstalled: the discovery errors of a cluster without Flux's CRDs
// are taken for Flux missing, and no other error is (moved here from the
// cutover's TestCutoverFluxNotInstalled with the cutover).
func TestNotInstalled(t *testing.T) {
	for _, e := range []error{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "source.toolkit.fluxcd.io", Kind: "GitRepository"}},
		&meta.NoResourceMatchError{PartialResource: sourcev1.GroupVersion.WithResource("")}} {
		if notInstalled(e) == nil {
			t.Errorf("%v not recognised as Flux missing", e)
		}
	}
	if notInstalled(errors.New("connection refused")) != nil {
		t.Error("any error taken for Flux missing")
	}
}
