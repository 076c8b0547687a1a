package crdschema

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/crdschema/schematest"
)

// TestValidate: objects of Flux v2.9.5's kinds as its CRDs judge them on
// create. Each case breaks one thing the API server refuses (the schema's
// types, required fields, enums, the x-kubernetes-validations rules, the
// served versions) or drops (an unknown field), next to the object as
// written, which passes.
func TestValidate(t *testing.T) {
	t.Parallel()
	v, err := ForFlux(schematest.FluxVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range schematest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			u, err := tc.Object()
			if err != nil {
				t.Fatal(err)
			}
			before := u.DeepCopy()
			r := v.Validate(context.Background(), u)
			if r.Known == tc.NotFlux {
				t.Fatalf("known %t", r.Known)
			}
			switch got := r.Summary(); {
			case tc.Errs == "" && got != "":
				t.Errorf("errors %q, want none", got)
			case tc.Errs != "" && !strings.Contains(got, tc.Errs):
				t.Errorf("errors %q, want %q", got, tc.Errs)
			}
			if d := strings.Join(r.Dropped, ","); d != tc.Dropped {
				t.Errorf("dropped %q, want %q", d, tc.Dropped)
			}
			if !equalObjects(before, u) {
				t.Error("Validate changed its input")
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}
