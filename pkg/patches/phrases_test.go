package patches

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// dep is a Flux Deployment whose manager container runs image with args.
func dep(name, image string, args ...string) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image, Args: args}}}}}}
}

// TestPhrases: the proofs name the caller's controls in the words it
// gives, and in the library's when it gives none.
func TestPhrases(t *testing.T) {
	t.Parallel()
	kc := []appsv1.Deployment{dep("kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.4.0", "--log-level=info")}
	sc := []appsv1.Deployment{dep("source-controller", "ghcr.io/fluxcd/source-controller:v1.4.1")}
	committed := &Result{Base: kc, Final: kc, CommittedFile: "clusters/dev/flux-system/gotk-components.yaml",
		Committed: []appsv1.Deployment{dep("kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.3.0", "--log-level=info")}}
	cli := Phrases{Plain: "--plain", Components: "--components", StrictOverlay: "the shipped overlays",
		Regenerate: func(dir string) string { return "`render --plain --output-dir " + dir + "`" }}
	for _, tc := range []struct {
		name    string
		res     *Result
		plain   bool
		gate    string
		library string // what the zero Phrases say
		caller  string // what cli says
	}{
		{"plain", &Result{Base: kc, Final: kc}, true, GatePlain.ID,
			"a plain render: the controller overlays were skipped on purpose", "--plain: the controller overlays were skipped on purpose"},
		{"the gate off under plain", &Result{Base: kc, Final: kc}, true, GateStrict.ID,
			"StrictPostBuildSubstitutions=false: a plain render skipped the overlays and kustomize-controller v1.4.0 defaults it off",
			"StrictPostBuildSubstitutions=false: --plain skipped the overlays"},
		{"no kustomize-controller", &Result{Base: sc, Final: sc}, false, GateStrict.ID,
			"cannot be checked; add it to Options.Components", "cannot be checked; add it to --components"},
		{"no overlay sets the gate", &Result{Base: kc, Final: kc}, false, GateStrict.ID,
			"no overlay sets it; apply an overlay that appends --feature-gates=StrictPostBuildSubstitutions=true", "no overlay sets it; apply the shipped overlays"},
		{"a committed file that differs", committed, false, GateCommitted.ID,
			"regenerate it (render this release with the same components and no overlay into clusters/dev/flux-system) and commit it",
			"regenerate it (`render --plain --output-dir clusters/dev/flux-system`) and commit it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, w := range []struct {
				words Phrases
				want  string
			}{{Phrases{}, tc.library}, {cli, tc.caller}} {
				var msg string
				for _, c := range w.words.Prove(tc.res, tc.plain) {
					if c.ID == tc.gate {
						msg = c.Message
					}
				}
				if !strings.Contains(msg, w.want) {
					t.Errorf("%s says %q, want %q", tc.gate, msg, w.want)
				}
			}
		})
	}
}
