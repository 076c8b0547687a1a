package check

import (
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// [undefined], each rule of it on one expression: strict or fail open, a
// name the API server refuses, text nothing reads, a webhook that may
// define the variable.
func TestUndefined(t *testing.T) {
	t.Parallel()
	const (
		image   = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: apps}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: web, image: \"web:${TAG}\"}\n"
		named   = "apiVersion: v1\nkind: Service\nmetadata: {name: \"${APP}-db\", namespace: apps}\n"
		comment = conf + "  app.conf: |\n    # listen ${TAG}\n    port = 80\n"
		pattern = conf + "  v: ${TAG/v/}\n"
	)
	for _, tc := range []struct {
		name, obj, expr string
		vars            map[string]string
		strict          bool
		off             verify.Detector // turned off
		webhook         bool
		want            []verdictText
	}{
		{name: "defined", obj: image, expr: "${TAG}", vars: map[string]string{"TAG": "1.0"}, strict: true},
		{name: "defined empty", obj: image, expr: "${TAG}", vars: map[string]string{"TAG": ""}, strict: true},
		{name: "strict: the Kustomization fails", obj: image, expr: "${TAG}", strict: true,
			want: failing("${TAG} in Deployment/apps/web is not defined (substitutes from the test's variables): strict substitution fails the whole Kustomization flux-system/apps")},
		{name: "fail open: it renders empty", obj: image, expr: "${TAG}",
			want: warning("it renders empty: fail open on this release — the test's release, so Kustomization flux-system/apps reports Ready")},
		{name: "fail open in a name: the API server refuses it", obj: named, expr: "${APP}",
			want: failing(`its name renders "-db", which is not a valid name: the API server refuses it`)},
		{name: "strict on a commented-out line", obj: comment, expr: "${TAG}", strict: true,
			want: failing("(a commented-out line of app.conf) is not defined (substitutes from the test's variables): though nothing reads it there")},
		{name: "fail open on a commented-out line", obj: comment, expr: "${TAG}",
			want: warning("it renders empty there, where nothing reads it")},
		{name: "a webhook may define it", obj: image, expr: "${TAG}", strict: true, webhook: true,
			want: warning("— unless Kyverno ClusterPolicy flux-vars (infra/policy.yaml) defines it")},
		{name: "a pattern operator", obj: pattern, expr: "${TAG/v/}", strict: true, want: failing("${TAG} in ConfigMap/apps/conf is not defined")},
		{name: "off", obj: image, expr: "${TAG}", strict: true, off: Undefined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(tc.vars, tc.strict, tc.off)
			if tc.webhook {
				s.o.mutators = []mutator{{what: "Kyverno ClusterPolicy flux-vars", loc: "infra/policy.yaml"}}
			}
			wantFindings(t, s.undefined(object(t, tc.obj), funcNode(t, tc.expr)), Undefined, appsAt, tc.want...)
		})
	}
}
