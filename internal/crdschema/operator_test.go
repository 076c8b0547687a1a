package crdschema

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestOperatorCRDs: the notification CRDs as the Flux Operator installs
// them accept its kinds as Alert event sources and Receiver resources, in
// every served version of every release, where Flux's own CRDs refuse them.
// The rule, read in controlplaneio-fluxcd/flux-operator v0.58.1
// internal/builder/templates.go (notificationPatchTmpl: a JSON-6902 add of
// FluxInstance, ResourceSet and ResourceSetInputProvider to
// .../eventSources/items/properties/kind/enum of alerts and
// .../resources/items/properties/kind/enum of receivers, for versions[0],
// versions[1] while the Flux minor is ≤ 8 and versions[2] while it is ≤ 6 —
// each version the release's CRD has) and internal/builder/components.go
// (the patch is added whenever notification-controller is a component).
func TestOperatorCRDs(t *testing.T) {
	t.Parallel()
	obj := func(api, kind, list string, k string) *unstructured.Unstructured {
		var spec map[string]any
		item := map[string]any{"kind": k, "name": "flux"}
		if kind == "Alert" {
			spec = map[string]any{"providerRef": map[string]any{"name": "chat"}, list: []any{item}}
		} else {
			spec = map[string]any{"type": "generic", "secretRef": map[string]any{"name": "token"}, list: []any{item}}
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(api)
		u.SetKind(kind)
		u.SetNamespace("flux-system")
		u.SetName("x")
		return u
	}
	for _, tc := range []struct {
		flux string
		apis map[string][]string // kind → served versions checked
	}{
		{"v2.2.3", map[string][]string{"Alert": {"v1beta2", "v1beta3"}, "Receiver": {"v1", "v1beta2"}}},
		{"v2.7.0", map[string][]string{"Alert": {"v1beta2", "v1beta3"}, "Receiver": {"v1", "v1beta2"}}},
		{"v2.9.5", map[string][]string{"Alert": {"v1beta3"}, "Receiver": {"v1"}}},
	} {
		plain, err := ForFlux(tc.flux)
		if err != nil {
			t.Fatal(err)
		}
		op, err := ForFluxOperator(tc.flux)
		if err != nil {
			t.Fatal(err)
		}
		for kind, versions := range tc.apis {
			list := map[string]string{"Alert": "eventSources", "Receiver": "resources"}[kind]
			for _, ver := range versions {
				for _, k := range append(OperatorKinds, "Kustomization", "NoSuchKind") {
					name := fmt.Sprintf("%s %s %s %s", tc.flux, kind, ver, k)
					u := obj("notification.toolkit.fluxcd.io/"+ver, kind, list, k)
					opR, plainR := op.Validate(context.Background(), u), plain.Validate(context.Background(), u)
					operatorKind := k != "Kustomization" && k != "NoSuchKind"
					switch {
					case k == "NoSuchKind":
						// Both refuse a kind in neither enum.
						if len(opR.Errors) == 0 || len(plainR.Errors) == 0 {
							t.Errorf("%s: operator %q, plain %q: want both refused", name, opR.Summary(), plainR.Summary())
						}
					case operatorKind:
						if len(opR.Errors) != 0 || !strings.Contains(plainR.Summary(), "Unsupported value: \""+k+"\"") {
							t.Errorf("%s: operator %q (want accepted), plain %q (want refused)", name, opR.Summary(), plainR.Summary())
						}
					default:
						if len(opR.Errors) != 0 || len(plainR.Errors) != 0 {
							t.Errorf("%s: operator %q, plain %q: want both accepted", name, opR.Summary(), plainR.Summary())
						}
					}
				}
			}
		}
	}
}
