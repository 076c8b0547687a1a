package check

import (
	"testing"

	"github.com/fluxcd/pkg/envsubst/parse"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// [parse-error] of an object's text: each expansion the parser rejects,
// named on its own.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []objectCase{
		{name: "parses", obj: conf + "  a: ${A}\n"},
		{name: "an empty expansion", obj: conf + "  a: x${}y\n",
			want: failing("${} in ConfigMap/apps/conf: the substitution parser rejects it")},
		{name: "two, each named", obj: conf + "  a: ${}\n  b: ${B\n",
			want: []verdictText{{verify.Fail, "${} in ConfigMap/apps/conf"}, {verify.Fail, "${B in ConfigMap/apps/conf"}}},
		{name: "escaped", obj: conf + "  a: $${}\n"},
		{name: "off", obj: conf + "  a: ${}\n", off: ParseError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(map[string]string{"A": "a"}, true, tc.off)
			r, y := objectText(t, tc.obj)
			tree, perr := parse.Parse(y)
			_, bad := funcNodes(y, tree, perr)
			wantFindings(t, s.parseErrors(r, bad), ParseError, appsAt, tc.want...)
		})
	}
}

// [parse-error] of the controller's own failures the parser pass did not
// explain: an invalid variable name once, however many objects it fails.
func TestUnexplained(t *testing.T) {
	t.Parallel()
	const (
		badName = "post build failed for 'ConfigMap/apps/a': var name is invalid: 1X"
		other   = "post build failed for 'ConfigMap/apps/a': variable not set (strict mode): \"X\""
	)
	undefined := at(appsAt, verify.Finding{Detector: Undefined})
	for _, tc := range []struct {
		name  string
		errs  []string
		found []finding // the pass's findings so far
		off   verify.Detector
		want  []verdictText
	}{
		{name: "none"},
		{name: "not explained", errs: []string{other}, want: failing("kustomize-controller's substitution fails Kustomization flux-system/apps: " + other)},
		{name: "explained by an [undefined]", errs: []string{other}, found: []finding{undefined}},
		{name: "an invalid name, though explained", errs: []string{badName}, found: []finding{undefined}, want: failing("var name is invalid: 1X")},
		{name: "an invalid name, said once", errs: []string{badName, badName + "2"}, want: failing("var name is invalid: 1X")},
		{name: "[undefined] off", errs: []string{other}, off: Undefined},
		{name: "[parse-error] off", errs: []string{other}, off: ParseError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanOf(nil, true, tc.off)
			for _, e := range tc.errs {
				s.controllerErrs[e] = true
			}
			s.fs = tc.found
			wantFindings(t, s.unexplained(), ParseError, appsAt, tc.want...)
		})
	}
}
