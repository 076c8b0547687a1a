package check

import (
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/envsubst/parse"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The unit tests of the substitution detectors call each one as the scan
// of an object (substitution.object) does, on a pass of Kustomization
// flux-system/apps with no repository behind it: what they find is
// located at the Kustomization.

// conf is the head of ConfigMap apps/conf, up to its data.
const conf = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: apps}\ndata:\n"

// appsAt is where Kustomization flux-system/apps of scanOf is declared.
var appsAt = fluxrepo.Location{File: "clusters/dev/apps.yaml", Line: 3}

// scanOf is the substitution pass of Kustomization flux-system/apps with
// vars, strict or not, with detector off turned off ("": none).
func scanOf(vars map[string]string, strict bool, off verify.Detector) *substitution {
	k := &fluxrepo.Kustomization{Kustomization: &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "apps"}}, Location: appsAt}
	o := Options{strict: strictness{on: strict, why: "the test's release"}, Disable: map[verify.Detector]bool{off: true}}
	return &substitution{o: o, env: &fluxrepo.Env{}, k: k,
		vars: vars, from: "the test's variables", names: map[string]bool{}, controllerErrs: map[string]bool{}}
}

// object is the resource y declares.
func object(t *testing.T, y string) *resource.Resource {
	t.Helper()
	r, err := provider.NewDefaultDepProvider().GetResourceFactory().FromBytes([]byte(y))
	if err != nil {
		t.Fatalf("%q: %v", y, err)
	}
	return r
}

// objectText is the resource y declares and its YAML, as the scan reads
// it.
func objectText(t *testing.T, y string) (*resource.Resource, string) {
	t.Helper()
	r := object(t, y)
	b, err := r.AsYAML()
	if err != nil {
		t.Fatal(err)
	}
	return r, string(b)
}

// funcNode is the first expansion of expr.
func funcNode(t *testing.T, expr string) *parse.FuncNode {
	t.Helper()
	tree, err := parse.Parse(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var n *parse.FuncNode
	walk(tree.Root, func(f *parse.FuncNode) {
		if n == nil {
			n = f
		}
	})
	if n == nil {
		t.Fatalf("%q holds no expansion", expr)
	}
	return n
}

// wantFindings checks that fs are one finding of det per entry of want,
// each with that verdict and holding its text, located at loc.
func wantFindings(t *testing.T, fs []finding, det verify.Detector, loc fluxrepo.Location, want ...verdictText) {
	t.Helper()
	if len(fs) != len(want) {
		t.Fatalf("%d finding(s), want %d: %v", len(fs), len(want), fs)
	}
	for i, w := range want {
		f := fs[i]
		if f.Detector != det || f.Verdict != w.verdict || !strings.Contains(f.Message, w.text) || f.location() != loc {
			t.Errorf("finding %d: %s\nwant a %s [%s] at %s holding %q", i, f, w.verdict, det, loc, w.text)
		}
	}
}

// objectCase is a row of a detector's unit test on one object: what it
// finds there.
type objectCase struct {
	name, obj string
	off       verify.Detector // turned off
	want      []verdictText
}

// verdictText is a finding's verdict and a text its message holds.
type verdictText struct {
	verdict verify.Verdict
	text    string
}

func failing(text string) []verdictText { return []verdictText{{verify.Fail, text}} }
func warning(text string) []verdictText { return []verdictText{{verify.Warn, text}} }
