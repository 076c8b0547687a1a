package check

import (
	"fmt"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// [default-op], each rule of it on one default-operator form: the
// variable's value taken or its default rendered, in a script, as a
// message, as a template default, or where nothing reads it.
func TestDefaultOp(t *testing.T) {
	t.Parallel()
	field := func(expr string) string {
		return fmt.Sprintf(conf+"  zone: %q\n", expr)
	}
	script := func(expr string) string {
		return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: init, namespace: apps}\nspec:\n  template:\n    spec:\n      containers:\n        - name: init\n          image: busybox\n          command:\n            - sh\n            - -c\n            - |\n              if [ -z \"%s\" ]; then exit 1; fi\n              echo ok\n", expr)
	}
	const comment = conf + "  app.conf: |\n    # zone ${ZONE:-eu}\n    port = 80\n"
	for _, tc := range []struct {
		name, obj, expr string
		vars            map[string]string
		off             verify.Detector // turned off
		want            []verdictText
	}{
		{name: "defined: its value renders", obj: field("${ZONE:-eu}"), expr: "${ZONE:-eu}", vars: map[string]string{"ZONE": "us"}},
		{name: "a colon form on an empty value: the default renders", obj: field("${ZONE:-eu}"), expr: "${ZONE:-eu}", vars: map[string]string{"ZONE": ""},
			want: warning(`${ZONE:-…} in ConfigMap/apps/conf: ZONE is not defined for Kustomization flux-system/apps (the test's variables), so its default "eu" renders here`)},
		{name: "a plain form on an empty value: the value renders", obj: field("${ZONE=eu}"), expr: "${ZONE=eu}", vars: map[string]string{"ZONE": ""}},
		{name: "a template default", obj: field("${ZONE:=eu}"), expr: "${ZONE:=eu}",
			want: warning(`so its default "eu" renders here`)},
		{name: "in a script: the shell's check is dead", obj: script("${TOKEN:-}"), expr: "${TOKEN:-}",
			want: failing("${TOKEN:-…} in a script of Job/apps/init: TOKEN is not defined in this environment (the test's variables), so post-build substitution replaces it with its default before the shell ever runs")},
		{name: "a message renders as the value", obj: field("${ZONE:?set ZONE}"), expr: "${ZONE:?set ZONE}",
			want: failing("envsubst renders the message as the value: a non-empty wrong value, not an error")},
		{name: "on a commented-out line: nothing reads it", obj: comment, expr: "${ZONE:-eu}"},
		{name: "off", obj: field("${ZONE:-eu}"), expr: "${ZONE:-eu}", off: DefaultOp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(tc.vars, true, tc.off)
			fs := s.defaultOp(object(t, tc.obj), funcNode(t, tc.expr))
			wantFindings(t, fs, DefaultOp, appsAt, tc.want...)
			for _, f := range fs {
				// The policy's defaultOperators.allow matches the variable.
				if f.name != funcNode(t, tc.expr).Param {
					t.Errorf("name %q, want the variable", f.name)
				}
			}
		})
	}
}
