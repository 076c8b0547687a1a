//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestFeatureGatesAgreeWithTheControllers: overlay.feature-gates passes
// exactly the --feature-gates settings the real controllers (the sandbox's
// binaries, built from the pinned modules) start with. A controller parses
// its flags and loads its gates before it reads a kubeconfig, so each
// binary is run with none: a refusal is "unable to load feature gates"
// (fluxcd/pkg/runtime/features SupportedFeatures, os.Exit(1) in main.go) or
// the flag's own parse error; an accepted gate is logged as "loading
// feature gate" before the run stops at the missing kubeconfig.
func TestFeatureGatesAgreeWithTheControllers(t *testing.T) {
	for _, tc := range []struct {
		controller, versionPin, arg string
		accepted                    bool
	}{
		{"kustomize-controller", "KUSTOMIZE_CONTROLLER_VERSION", "--feature-gates=StrictPostBuildSubstitutions=true", true},
		{"kustomize-controller", "KUSTOMIZE_CONTROLLER_VERSION", "--feature-gates=StrictPostBuildSubstitution=true", false},
		{"kustomize-controller", "KUSTOMIZE_CONTROLLER_VERSION", "--feature-gates=DetectDrift=true", false},
		{"helm-controller", "HELM_CONTROLLER_VERSION", "--feature-gates=DetectDrift=true,AdditiveCELDependencyCheck=true", true},
		{"helm-controller", "HELM_CONTROLLER_VERSION", "--feature-gates=DetectDrift", false},
		{"source-controller", "SOURCE_CONTROLLER_VERSION", "--feature-gates=CacheSecretsAndConfigMaps=true", true},
		{"source-controller", "SOURCE_CONTROLLER_VERSION", "--feature-gates=StrictPostBuildSubstitutions=true", false},
	} {
		t.Run(tc.controller+" "+tc.arg, func(t *testing.T) {
			version := suite.versions[tc.versionPin]
			dep := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: tc.controller},
				Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "manager", Image: "ghcr.io/fluxcd/" + tc.controller + ":" + version, Args: []string{tc.arg}}}}}}}
			var ours *verify.Check
			for _, c := range patches.Prove(&patches.Result{Final: []appsv1.Deployment{dep}}, false) {
				if c.ID == patches.GateFeatureGates.ID {
					ours = &c
				}
			}
			if ours == nil {
				t.Fatal("no overlay.feature-gates check")
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(suite.binDir, tc.controller), tc.arg, "--metrics-addr=127.0.0.1:0", "--health-addr=127.0.0.1:0")
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
			cmd.Dir = t.TempDir()
			out, _ := cmd.CombinedOutput()
			refused := strings.Contains(string(out), "unable to load feature gates") || strings.Contains(string(out), `for "--feature-gates" flag`)
			loaded := strings.Contains(string(out), "loading feature gate")
			if refused == loaded {
				t.Fatalf("%s %s: cannot tell whether it took %s (refused %t, loaded %t):\n%s", tc.controller, version, tc.arg, refused, loaded, out)
			}
			if loaded != tc.accepted {
				t.Fatalf("%s %s took %s: %t, the table says %t:\n%s", tc.controller, version, tc.arg, loaded, tc.accepted, out)
			}
			if (ours.Verdict == verify.Pass) != loaded {
				t.Errorf("overlay.feature-gates %s (%s), but %s %s %s it:\n%s", ours.Verdict, ours.Message, tc.controller, version, map[bool]string{true: "takes", false: "refuses"}[loaded], out)
			}
			t.Logf("%s %s: %s; overlay.feature-gates %s", tc.controller, version, map[bool]string{true: "starts", false: "refuses"}[loaded], ours.Verdict)
		})
	}
}
