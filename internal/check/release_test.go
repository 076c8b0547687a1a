package check

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// copyRelease copies testdata/releases/name and applies edits (as
// copyLayout).
func copyRelease(t *testing.T, name string, edits ...edit) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("../../testdata/releases", name))); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(dst, e.file)
		if e.old == "" {
			if err := os.WriteFile(p, []byte(e.new), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), e.old) {
			t.Fatalf("%s: %v, or no %q", e.file, err, e.old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.old, e.new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// An Alert on the Flux Operator's kind, for the layouts without the operator.
const alertOnFluxInstance = `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: chat
  namespace: flux-system
spec:
  type: generic
  address: https://chat.example.invalid/hook
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: flux-instance
  namespace: flux-system
spec:
  providerRef:
    name: chat
  eventSources:
    - kind: FluxInstance
      name: flux
`

// waitForRoot makes oci-substituted's flux-install wait for the root
// that applies the ConfigMap or Secret it substitutes from (no race).
const waitForRoot = "  dependsOn:\n    - name: flux-system\n"

// flux2AtV230 declares Flux v2.3.0 by a GitRepository of flux2 that a
// Kustomization applies.
const flux2AtV230 = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux2
  namespace: flux-system
spec:
  interval: 1h
  url: https://github.com/fluxcd/flux2
  ref:
    tag: v2.3.0
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux2
  namespace: flux-system
spec:
  interval: 1h
  path: ./manifests/install
  prune: false
  sourceRef:
    kind: GitRepository
    name: flux2
`

// TestFluxRelease: the release the repository declares judges it
// (testdata/releases, one repository per declaration form of DESIGN §10).
// Each holds a HelmRelease helm.toolkit.fluxcd.io/v2beta2 and a
// HelmRepository source.toolkit.fluxcd.io/v1beta2, which the Flux 2.3 CRDs
// serve and the 2.9 ones do not, and an undefined ${GREETING}.
//
// The rules, read in the controllers' code:
//   - the Flux Operator resolves spec.distribution.version as a Masterminds
//     semver constraint, the newest release of its data directory matching,
//     of a Flux minor its own image embeds (controlplaneio-fluxcd/flux-operator
//     v0.58.1, internal/controller/fluxinstance_controller.go build →
//     internal/builder/semver.go MatchVersionWithEmbedded, from v0.54.0); flux-operator-manifests:vX ships the releases under
//     config/data/flux/ at tag vX (versions.env FLUX_OPERATOR_MAX_FLUX);
//   - StrictPostBuildSubstitutions defaults off in kustomize-controller
//     before v1.9.0 (internal/features/features.go, v1.3.0 false, v1.9.0
//     true; internal/patches gatedefaults.txt): fluxcd/pkg/kustomize
//     SubstituteVariables with strict off renders an undefined ${VAR} empty
//     and the Kustomization is Ready;
//   - the Flux Operator appends FluxInstance, ResourceSet and
//     ResourceSetInputProvider to Alert spec.eventSources[].kind and Receiver
//     spec.resources[].kind in every version of the CRDs it installs
//     (flux-operator v0.58.1, internal/builder/templates.go
//     notificationPatchTmpl, applied by components.go when
//     notification-controller is a component): crdschema.OperatorCRDs.
func TestFluxRelease(t *testing.T) {
	t.Parallel()
	failOpen := "it renders empty: fail open on this release — kustomize-controller v1.3.0 (Flux v2.3.0) defaults StrictPostBuildSubstitutions to false"
	for _, tc := range []struct {
		name, repo string
		// layout: a testdata/layouts repository instead, checked at path.
		layout, path string
		edits        []edit
		flux         string // --flux-version
		exit         int
		// want: texts of the gate id's check with that verdict; not: texts
		// no check may carry.
		checks []want
		not    []string
		// notDet: detectors no check may have a finding of.
		notDet []verify.Detector
	}{
		{name: "FluxInstance version range", repo: "instance-version", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.3.0, declared by FluxInstance spec.distribution.version "2.3.x" at clusters/dev/flux-system/flux-instance.yaml:8`),
				has("check.substitution/flux-system/apps", verify.Warn, failOpen).with(Undefined, "apps/greeting.yaml:8: ${GREETING} in ConfigMap/podinfo/greeting is not defined"),
				has("check.substitution/flux-system/flux-system", verify.Pass),
			},
			notDet: []verify.Detector{Schema}},
		// Review item 4: from flux-operator v0.54.0 the FluxInstance
		// controller matches the range only among the Flux minors its own
		// image embeds (internal/controller/fluxinstance_controller.go
		// build → internal/builder/semver.go MatchVersionWithEmbedded, as
		// of v0.58.1): the running operator may cap the minor, said in a
		// note.
		{name: "FluxInstance range: the running operator may cap it", repo: "instance-version", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, "the running Flux Operator matches the range only among the Flux minors its image embeds"),
			}},
		{name: "FluxInstance: the same objects on 2.9.x", repo: "instance-version", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", `"2.3.x"`, `"2.9.x"`}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.9.5, declared by FluxInstance spec.distribution.version "2.9.x"`),
				has("check.substitution/flux-system/apps", verify.Fail, "strict substitution fails the whole Kustomization flux-system/apps").with(Schema, "HelmRelease/podinfo/podinfo is refused by the API server (Flux v2.9.5's CRDs as the Flux Operator installs them)"),
			}},
		{name: "--flux-version overrides the declaration", repo: "instance-version", flux: "v2.9.5", exit: session.ExitFailed,
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.9.5 (--flux-version)", `--flux-version overrides FluxInstance spec.distribution.version "2.3.x"`),
				has("check.substitution/flux-system/apps", verify.Fail).with(Schema, "HelmRepository/podinfo/podinfo is refused by the API server"),
			}},
		// Issue 45 item 3: the chart values declaring the root are also
		// applied by Kustomization flux-instance, whose substitution the
		// cluster keeps after bootstrap.
		{name: "flux-instance chart values after substitution", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitOK,
			edits: []edit{{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "version: 2.9.x", `version: "${FLUX_VERSION:=2.7.x}"`},
				{"kubernetes/apps/flux-system/flux-instance/ks.yaml", "  wait: false\n", "  wait: false\n  postBuild:\n    substitute:\n      CLUSTER: home\n"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.7.5, declared by FluxInstance spec.distribution.version "${FLUX_VERSION:=2.7.x}" at kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:14 ("2.7.x" after Kustomization flux-system/flux-instance's post-build substitution)`),
			}},
		// The same, with no postBuild: the operator gets the text as
		// written and refuses it (it is no semver range).
		{name: "flux-instance chart values with a variable nothing substitutes: the operator refuses it", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitFailed,
			edits: []edit{{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "version: 2.9.x", `version: "${FLUX_VERSION:=2.7.x}"`}},
			checks: []want{
				has("check.flux-release", verify.Fail, `semver '${FLUX_VERSION:=2.7.x}' parse error`, "has no spec.postBuild: the controller applies it as written"),
			}},
		{name: "flux-instance chart values declaring the root", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitOK,
			edits: []edit{{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "version: 2.9.x", "version: 2.7.x"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.7.5, declared by FluxInstance spec.distribution.version "2.7.x" at kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:14`,
					"a FluxInstance manages the cluster (kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:18)",
					"(Flux v2.7.5) defaults StrictPostBuildSubstitutions to false"),
			}},
		{name: "FluxInstance: no operator, the Alert on FluxInstance is refused", repo: "header", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/alerts.yaml", "", alertOnFluxInstance}},
			checks: []want{
				has("check.substitution/flux-system/flux-system", verify.Fail).with(Schema, `Alert/flux-system/flux-instance is refused by the API server (Flux v2.3.0's CRDs): spec.eventSources[0].kind: Unsupported value: "FluxInstance"`),
			}},
		{name: "operator artifact caps the range", repo: "instance-artifact", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.3.0, declared by FluxInstance spec.distribution.artifact (flux-operator-manifests:v0.9.0 ships Flux up to v2.3.0) "2.x" at clusters/dev/flux-system/flux-instance.yaml:8`),
				has("check.substitution/flux-system/apps", verify.Warn, failOpen),
			},
			notDet: []verify.Detector{Schema}},
		{name: "operator artifact of a 2.9 operator", repo: "instance-artifact", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", "manifests:v0.9.0", "manifests:v0.46.0"}},
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.8.5, declared by FluxInstance spec.distribution.artifact (flux-operator-manifests:v0.46.0 ships Flux up to v2.8.5)"),
				has("check.substitution/flux-system/apps", verify.Fail).with(Schema, "HelmRelease/podinfo/podinfo is refused by the API server (Flux v2.8.5's CRDs"),
			}},
		// Review item 3: a range only releases above what the artifact
		// ships match. The Flux Operator matches the range among the
		// artifact's releases only (flux-operator v0.58.1,
		// internal/controller/fluxinstance_controller.go build →
		// internal/builder/semver.go MatchVersionWithEmbedded: no match is
		// the error "no match found for semver"), so it fails the
		// FluxInstance: a FAIL, not a PASS on the default release.
		{name: "operator artifact ships no release of the range: the operator fails it", repo: "instance-artifact", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", "manifests:v0.9.0", "manifests:v0.46.0"}, {"clusters/dev/flux-system/flux-instance.yaml", `"2.x"`, `"2.9.x"`}},
			checks: []want{
				has("check.flux-release", verify.Fail, `"2.9.x" at clusters/dev/flux-system/flux-instance.yaml:8`, "flux-operator-manifests:v0.46.0 ships Flux up to v2.8.5", "no match found for semver"),
			},
			not: []string{"declares no release", "no embedded release matches it"}},
		// A declared range this build embeds no release of: judged by the
		// default, said so, and a warning — not "declares no release".
		{name: "FluxInstance range not embedded: the default, a warning", repo: "instance-version", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", `"2.3.x"`, `"2.10.x"`}},
			checks: []want{
				has("check.flux-release", verify.Warn, `Flux v2.9.5, the default: FluxInstance spec.distribution.version "2.10.x" declared at clusters/dev/flux-system/flux-instance.yaml:8 is not embedded in this build`),
			},
			not: []string{"declares no release"}},
		// Issue 45 item 7: the Flux Operator parses the range with
		// Masterminds semver (flux-operator v0.59.0
		// internal/controller/fluxinstance_controller.go build →
		// internal/builder/semver.go MatchVersionWithEmbedded →
		// matchVersions: semver.NewConstraint; its error fails the build,
		// Ready False BuildFailed, stalled): a FAIL with the library's
		// words, not a WARN "not embedded".
		{name: "FluxInstance range the operator does not parse: FAIL", repo: "instance-version", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", `"2.3.x"`, `">=2.3 <2.0 || &&"`}},
			checks: []want{
				has("check.flux-release", verify.Fail, `FluxInstance spec.distribution.version ">=2.3 <2.0 || &&" at clusters/dev/flux-system/flux-instance.yaml:8: the Flux Operator does not parse it as a semver range and fails the FluxInstance (BuildFailed: "build failed: semver '>=2.3 <2.0 || &&' parse error: improper constraint: " &&"")`,
					`fix: write a range the Masterminds semver library parses`),
			},
			not: []string{"is not embedded in this build"}},
		// It parses and no release satisfies it: matchVersions finds none
		// and MatchVersionWithEmbedded fails it ("no match found for
		// semver").
		{name: "FluxInstance range no release satisfies: FAIL", repo: "instance-version", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", `"2.3.x"`, `">=2.3 <2.0"`}},
			checks: []want{
				has("check.flux-release", verify.Fail, `"no match found for semver: >=2.3 <2.0"`, "fix: write a range a release satisfies"),
			}},
		// The FluxInstance declaring the root is applied from outside the
		// repository's Kustomizations (by hand, at bootstrap): a variable
		// in it may be substituted there; not known offline, a warning.
		// The FluxInstance is in the root directory, which the root
		// Kustomization applies without postBuild: the operator gets the
		// variable as written, and does not parse it.
		{name: "FluxInstance with a variable the root applies as written: the operator refuses it", repo: "instance-version", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/flux-instance.yaml", `"2.3.x"`, `"${FLUX_VERSION}"`}},
			checks: []want{
				has("check.flux-release", verify.Fail, `semver '${FLUX_VERSION}' parse error: improper constraint`, "Kustomization flux-system/flux-system, which applies it, has no spec.postBuild: the controller applies it as written"),
			}},
		{name: "gotk-components.yaml header", repo: "header", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.3.0, declared by flux bootstrap's gotk-components.yaml header at clusters/dev/flux-system/gotk-components.yaml:3"),
				has("check.substitution/flux-system/apps", verify.Warn, failOpen),
			},
			notDet: []verify.Detector{Schema}},
		{name: "header: the repository's patch turns strict substitution on", repo: "header", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/kustomization.yaml", "value: --requeue-dependency=5s", "value: --feature-gates=StrictPostBuildSubstitutions=true"}},
			checks: []want{
				has("check.substitution/flux-system/apps", verify.Fail, "strict substitution fails the whole Kustomization flux-system/apps"),
				has("check.flux-release", verify.Pass, "StrictPostBuildSubstitutions=true set by clusters/dev/flux-system (kustomize-controller v1.3.0)"),
			}},
		{name: "header of a 2.9 release", repo: "header", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux-system/gotk-components.yaml", "v2.3.0", "v2.9.5"}},
			checks: []want{
				has("check.substitution/flux-system/apps", verify.Fail, "strict substitution fails").with(Schema, "HelmRelease/podinfo/podinfo is refused by the API server (Flux v2.9.5's CRDs)"),
			}},
		{name: "a release not embedded: its minor's newest", repo: "header", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/flux-system/gotk-components.yaml", "v2.3.0", "v2.3.1"}},
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.3.0, declared by flux bootstrap's gotk-components.yaml header \"v2.3.1\"", "judged by v2.3.0, the newest embedded release of Flux 2.3"),
			}},
		// Issue 45 item 3: v2.2.2 is older than the oldest embedded release
		// (v2.2.3) but of its minor, whose patch releases serve the same
		// API versions: judged by v2.2.3, said in the message — not a skip
		// "older than the embedded releases".
		{name: "a release below the oldest embedded, of its minor: that minor's newest", repo: "header", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/flux-system/gotk-components.yaml", "v2.3.0", "v2.2.2"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.2.3, declared by flux bootstrap's gotk-components.yaml header "v2.2.2" at clusters/dev/flux-system/gotk-components.yaml:3: Flux v2.2.2 is not embedded in this build: judged by v2.2.3, the newest embedded release of Flux 2.2`),
			},
			not: []string{"older than the releases embedded"}},
		{name: "a release of a minor not embedded, below them all: older", repo: "header", exit: session.ExitIncomplete,
			edits: []edit{{"clusters/dev/flux-system/gotk-components.yaml", "v2.3.0", "v2.1.0"}},
			checks: []want{
				has("check.flux-release", verify.Skip, "older than the releases embedded in this build"),
			}},
		{name: "kustomize remote base", repo: "remote-base", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.3.0, declared by the kustomize remote base github.com/fluxcd/flux2/manifests/install at infrastructure/flux/kustomization.yaml:4"),
				has("check.substitution/flux-system/apps", verify.Warn, failOpen),
			},
			notDet: []verify.Detector{Schema}},
		{name: "OCIRepository of flux-manifests", repo: "oci-manifests", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.3.0, declared by OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag at clusters/dev/flux.yaml:10"),
				has("check.substitution/flux-system/apps", verify.Warn, failOpen),
			},
			notDet: []verify.Detector{Schema}},
		// Issue 45 item 3: the declaring field after the applying
		// Kustomization's post-build substitution (kustomize-controller
		// v1.9.x kustomization_controller.go build → fluxcd/pkg/kustomize
		// SubstituteVariables: substituteFrom in order, then
		// spec.postBuild.substitute over them; ${VAR:=default} renders the
		// default where VAR is undefined, fluxcd/pkg/envsubst).
		{name: "OCIRepository tag after substitution: the default", repo: "oci-substituted", exit: session.ExitOK,
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.8.5, declared by OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag "${FLUXCD_VERSION:=v2.8.5}" at infrastructure/flux/flux.yaml:10 ("v2.8.5" after Kustomization flux-system/flux-install's post-build substitution)`,
					`is "v2.8.5" after post-build substitution by Kustomization flux-system/flux-install, which applies it`, "FLUXCD_VERSION is not defined: its default"),
			},
			not: []string{"not embedded"}},
		{name: "OCIRepository tag after substitution: from a ConfigMap", repo: "oci-substituted", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/cluster-settings.yaml", "CLUSTER: dev", "CLUSTER: dev\n  FLUXCD_VERSION: v2.7.5"},
				{"clusters/dev/flux.yaml", "  postBuild:\n", waitForRoot + "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.7.5, declared by OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag "${FLUXCD_VERSION:=v2.8.5}"`, `("v2.7.5" after Kustomization flux-system/flux-install's post-build substitution)`,
					"FLUXCD_VERSION from ConfigMap flux-system/cluster-settings (clusters/dev/cluster-settings.yaml:1)"),
			}},
		{name: "OCIRepository tag after substitution: substitute over substituteFrom", repo: "oci-substituted", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/cluster-settings.yaml", "CLUSTER: dev", "CLUSTER: dev\n  FLUXCD_VERSION: v2.7.5"},
				{"clusters/dev/flux.yaml", "  postBuild:\n", waitForRoot + "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n"},
				{"clusters/dev/flux.yaml", "REGISTRY: ghcr.io/fluxcd", "REGISTRY: ghcr.io/fluxcd\n      FLUXCD_VERSION: v2.9.5"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `("v2.9.5" after Kustomization flux-system/flux-install's post-build substitution)`, "FLUXCD_VERSION from its spec.postBuild.substitute"),
			}},
		{name: "OCIRepository tag after substitution: from a Secret, not shown", repo: "oci-substituted", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/flux-version.yaml", "", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: flux-version\n  namespace: flux-system\nstringData:\n  FLUXCD_VERSION: v2.6.4\n"},
				{"clusters/dev/flux.yaml", "  postBuild:\n", waitForRoot + "  postBuild:\n    substituteFrom:\n      - kind: Secret\n        name: flux-version\n"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.6.4, declared by OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag "${FLUXCD_VERSION:=v2.8.5}" at infrastructure/flux/flux.yaml:10 (after Kustomization flux-system/flux-install's post-build substitution)`,
					"FLUXCD_VERSION from Secret flux-system/flux-version (clusters/dev/flux-version.yaml:1) (a Secret: its value is not shown)"),
			},
			not: []string{`"v2.6.4"`}},
		// No postBuild: the controller applies the value as written, which
		// is no release: the default, a warning saying why.
		{name: "OCIRepository tag with a variable nothing substitutes", repo: "oci-substituted", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/flux.yaml", "  postBuild:\n    substitute:\n      REGISTRY: ghcr.io/fluxcd\n", ""}},
			checks: []want{
				has("check.flux-release", verify.Warn, `Flux v2.9.5, the default: OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag "${FLUXCD_VERSION:=v2.8.5}" declared at infrastructure/flux/flux.yaml:10 names no release known offline: it holds a variable and`,
					"Kustomization flux-system/flux-install, which applies it, has no spec.postBuild: the controller applies it as written"),
			}},
		// fluxcd/pkg/kustomize SubstituteVariables substitutes only when
		// some variable is defined or substituteStrategy is Always ("if
		// len(vars) > 0 || options.Always"): a postBuild defining none
		// leaves even ${VAR:=default} as written.
		{name: "OCIRepository tag: a postBuild that defines no variable does not substitute", repo: "oci-substituted", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/flux.yaml", "    substitute:\n      REGISTRY: ghcr.io/fluxcd\n", "    substitute: {}\n"},
				{"infrastructure/flux/flux.yaml", "${REGISTRY}", "ghcr.io/fluxcd"}},
			checks: []want{
				has("check.flux-release", verify.Warn, "post-build substitution defines no variable, so the controller does not run it"),
			}},
		// An undefined variable without a default renders empty (not
		// strict): no release, said so.
		{name: "OCIRepository tag of an undefined variable renders empty", repo: "oci-substituted", exit: session.ExitFailed,
			edits: []edit{{"infrastructure/flux/flux.yaml", "${FLUXCD_VERSION:=v2.8.5}", "${FLUXCD_VERSION}"}},
			checks: []want{
				has("check.flux-release", verify.Warn, "it renders empty after Kustomization flux-system/flux-install's post-build substitution (FLUXCD_VERSION is not defined)"),
			}},
		// Review item 16: the first declaration does not resolve (a tag
		// that is no release): the next one that does judges, the first
		// named in a note.
		{name: "the first declaration that resolves judges", repo: "oci-manifests", exit: session.ExitOK,
			edits: []edit{{"clusters/dev/flux.yaml", "tag: v2.3.0", "tag: latest"}, {"clusters/dev/flux2.yaml", "", flux2AtV230}},
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.3.0, declared by GitRepository https://github.com/fluxcd/flux2 ref.tag at clusters/dev/flux2.yaml:10",
					`OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag "latest" at clusters/dev/flux.yaml:10: not a release version`),
			}},
		// Review item 15: source-controller takes ref.digest, then
		// ref.semver, before ref.tag (source-controller v1.9.x
		// internal/controller/ocirepository_controller.go getArtifactRef;
		// api/v1 OCIRepositoryRef: "takes precedence over"). A semver is
		// a range; a digest pins a release not known offline: the
		// default, a warning.
		{name: "OCIRepository ref.semver wins over ref.tag", repo: "oci-manifests", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux.yaml", "    tag: v2.3.0\n", "    tag: v2.3.0\n    semver: \"2.9.x\"\n"}},
			checks: []want{
				has("check.flux-release", verify.Pass, `Flux v2.9.5, declared by OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.semver "2.9.x" at clusters/dev/flux.yaml:11`),
			}},
		// source-controller v1.9.5 getTagBySemver: a range Masterminds
		// semver does not parse fails the OCIRepository ("semver '…' parse
		// error"): the release is never fetched — a FAIL, not the default.
		{name: "OCIRepository ref.semver that does not parse", repo: "oci-manifests", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux.yaml", "    tag: v2.3.0\n", "    tag: v2.3.0\n    semver: \">=2.3 <2.0 || &&\"\n"}},
			checks: []want{
				has("check.flux-release", verify.Fail, `source-controller does not parse it as a semver range and fails the OCIRepository ("semver '>=2.3 <2.0 || &&' parse error`),
			}},
		{name: "OCIRepository ref.digest wins over ref.tag", repo: "oci-manifests", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux.yaml", "    tag: v2.3.0\n", "    tag: v2.3.0\n    digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n"}},
			checks: []want{
				has("check.flux-release", verify.Warn, "Flux v2.9.5, the default: OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.digest (it takes precedence over ref.tag; the release it pins is not known offline)"),
			}},
		{name: "OCIRepository of flux-manifests nothing applies is no declaration", repo: "oci-manifests", exit: session.ExitFailed,
			edits: []edit{{"clusters/dev/flux.yaml", "    name: flux-manifests\n", "    name: other\n"}},
			checks: []want{
				has("check.flux-release", verify.Pass, "Flux v2.9.5 (the default: the repository declares no release)"),
			}},
		{name: "GitRepository of flux2 at v0.x: older than embedded", repo: "git-flux2", exit: session.ExitIncomplete,
			checks: []want{
				has("check.flux-release", verify.Skip, "Flux v0.41.2, declared by GitRepository https://github.com/fluxcd/flux2 ref.tag at clusters/dev/flux.yaml:10: older than the releases embedded in this build", "were not checked against a schema"),
				has("check.substitution/flux-system/apps", verify.Warn, "it renders empty: fail open on this release — Flux v0.41.2's kustomize-controller substitutes without StrictPostBuildSubstitutions"),
			},
			notDet: []verify.Detector{Schema}},
		{name: "GitRepository of flux2 at v0.x, the variable defined: skip, exit 3", repo: "git-flux2", exit: session.ExitIncomplete,
			edits: []edit{{"apps/greeting.yaml", "${GREETING}", "hello"}},
			checks: []want{
				has("check.flux-release", verify.Skip, "Flux v0.41.2"),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, path := "", "clusters/dev"
			if tc.layout != "" {
				repo, path = copyLayout(t, tc.layout, tc.edits...), tc.path
			} else {
				repo = copyRelease(t, tc.repo, tc.edits...)
			}
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: path}, NoCompare: true, FluxVersion: tc.flux})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			if session.ReportCode(rep) != tc.exit {
				t.Fatalf("exit %d, want %d:\n%s", session.ReportCode(rep), tc.exit, dump(rep))
			}
			for _, w := range tc.checks {
				w.in(t, rep)
			}
			for _, n := range tc.not {
				for _, c := range rep.Checks {
					if strings.Contains(text(c), n) {
						t.Fatalf("%s carries %q:\n%s", c.ID, n, dump(rep))
					}
				}
			}
			for _, d := range tc.notDet {
				for _, c := range rep.Checks {
					if hasDetector(c, d) {
						t.Fatalf("%s has a [%s] finding:\n%s", c.ID, d, dump(rep))
					}
				}
			}
		})
	}
}

// want is a check the report must hold: its id, verdict and texts, and
// the findings it must have.
type want struct {
	id      string
	verdict verify.Verdict
	texts   []string
	found   []wantFinding
}

func has(id string, v verify.Verdict, texts ...string) want {
	return want{id: id, verdict: v, texts: texts}
}

// with: the check has a finding of det whose line holds text too.
func (w want) with(det verify.Detector, text string) want {
	w.found = append(slices.Clip(w.found), wantFinding{det, text})
	return w
}

func (w want) in(t *testing.T, rep *verify.Report) {
	t.Helper()
	for _, c := range rep.Checks {
		if c.ID != w.id {
			continue
		}
		for _, s := range w.texts {
			if c.Verdict != w.verdict || !strings.Contains(text(c), s) {
				t.Fatalf("want %s %s containing %q; got:\n%s", w.id, w.verdict, s, dump(rep))
			}
		}
		for _, f := range w.found {
			if c.Verdict != w.verdict || !hasFinding(c, f.det, f.text) {
				t.Fatalf("want %s %s with %s; got:\n%s", w.id, w.verdict, f, dump(rep))
			}
		}
		if c.Verdict != w.verdict {
			t.Fatalf("want %s %s; got:\n%s", w.id, w.verdict, dump(rep))
		}
		return
	}
	t.Fatalf("no %s:\n%s", w.id, dump(rep))
}
