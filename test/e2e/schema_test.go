//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/crdschema"
	"github.com/homelab-ops/bootstrap/internal/crdschema/schematest"
)

// TestSchemaMatchesAPIServer: every case of crdschema's table, created
// (dry run) on the sandbox's real kube-apiserver with Flux v2.9.5's CRDs
// installed, gets the verdict check's [schema] gives offline: refused with
// the same message, accepted, or accepted without the field it drops
// (which strict field validation names).
func TestSchemaMatchesAPIServer(t *testing.T) {
	ctx := timeoutCtx(t, 3*time.Minute)
	ensureFlux(t)
	v, err := crdschema.ForFlux(schematest.FluxVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range schematest.Cases() {
		if tc.NotFlux {
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			u, err := tc.Object()
			if err != nil {
				t.Fatal(err)
			}
			offline := v.Validate(context.Background(), u)
			create := func(opts ...client.CreateOption) error {
				return suite.client.Create(ctx, u.DeepCopy(), append([]client.CreateOption{client.DryRunAll}, opts...)...)
			}
			server := create()
			switch {
			case tc.Errs != "":
				if server == nil || len(offline.Errors) == 0 {
					t.Fatalf("want both to refuse: API server %v; offline %q", server, offline.Summary())
				}
				if !strings.Contains(server.Error(), tc.Errs) || !strings.Contains(offline.Summary(), tc.Errs) {
					t.Errorf("want both to say %q:\nAPI server: %v\noffline:    %s", tc.Errs, server, offline.Summary())
				}
			default:
				if server != nil || len(offline.Errors) > 0 {
					t.Fatalf("want both to accept: API server %v; offline %q", server, offline.Summary())
				}
			}
			if tc.Errs != "" {
				return
			}
			// What is dropped, strict field validation refuses by name.
			strict := create(client.FieldValidation("Strict"))
			switch {
			case tc.Dropped == "" && (strict != nil || len(offline.Dropped) > 0):
				t.Errorf("nothing to drop: strict %v, offline dropped %v", strict, offline.Dropped)
			case tc.Dropped != "" && (strict == nil || !strings.Contains(strict.Error(), `unknown field "`+tc.Dropped+`"`) || strings.Join(offline.Dropped, ",") != tc.Dropped):
				t.Errorf("want %s dropped by both: strict %v, offline %v", tc.Dropped, strict, offline.Dropped)
			}
		})
	}
}
