package check

import (
	"context"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const fluxTasks = ".taskfiles/flux/Taskfile.yaml"

// TestBootstrapBringUp (issue 54): check judges a repository by its own
// bootstrap (bootstrapfiles): what the Taskfile or the resources template
// creates before Flux exists before the first reconcile, and the Flux
// install it applies is the release. The taskfile layout is checked at
// kubernetes/flux with the root cluster; each bootstrap line removed
// brings the verdict back.
func TestBootstrapBringUp(t *testing.T) {
	t.Parallel()
	settingsLine := edit{fluxTasks, "      - kubectl apply -f {{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml\n", ""}
	// cluster-apps substitutes from a ConfigMap it applies itself.
	appsSettings := []edit{{"kubernetes/apps/default/settings.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apps-settings\n  namespace: flux-system\ndata:\n  REPLICAS: \"1\"\n"},
		{"kubernetes/apps/default/kustomization.yaml", "resources:\n", "resources:\n  - ./settings.yaml\n"},
		{"kubernetes/flux/apps.yaml", "      - kind: Secret\n        name: cluster-secrets\n  patches:", "      - kind: Secret\n        name: cluster-secrets\n      - kind: ConfigMap\n        name: apps-settings\n  patches:"}}
	undefinedMail := edit{"kubernetes/apps/default/echo/app/configmap.yaml", "${SECRET_ACME_EMAIL}", "${SECRET_ACME_MAIL}"}
	kyvernoRelease := []edit{
		{"bootstrap/helmfile.d/01-apps.yaml", "  - name: flux-operator\n", "  - name: cluster-policies\n    namespace: kyverno\n    chart: oci://registry.example.invalid/charts/raw\n    values: [\"./values-policies.yaml\"]\n\n  - name: flux-operator\n"},
		{"bootstrap/helmfile.d/values-policies.yaml", "", "resources:\n  - apiVersion: kyverno.io/v1\n    kind: ClusterPolicy\n    metadata:\n      name: flux-cluster-vars\n    spec:\n      rules:\n        - name: add-vars\n          match:\n            any:\n              - resources:\n                  kinds: [kustomize.toolkit.fluxcd.io/v1/Kustomization]\n          exclude:\n            any:\n              - resources:\n                  namespaces: [kube-system]\n          mutate:\n            patchStrategicMerge:\n              spec:\n                postBuild:\n                  substituteFrom:\n                    - kind: ConfigMap\n                      name: cluster-vars\n"},
	}
	for _, tc := range []struct {
		name, layout, path, root string
		edits                    []edit
		bringUp                  map[string]string
		id                       string
		verdict                  verify.Verdict
		want                     []string
		found                    []wantFinding
		not                      []string
	}{
		{name: "taskfile: the root's vars are seeded by the Taskfile", layout: "taskfile",
			id: "check.race/flux-system/cluster", verdict: verify.Warn,
			want: []string{"ConfigMap/flux-system/cluster-settings, which only flux-system/cluster applies, is seeded by the repository's bootstrap (Taskfile task flux:bootstrap: kubectl apply -f kubernetes/flux/vars/cluster-settings.yaml at .taskfiles/flux/Taskfile.yaml:11) before Flux: flux-system/cluster comes up on a fresh cluster",
				"Secret/flux-system/cluster-secrets, which only flux-system/cluster applies, is seeded by the repository's bootstrap (Taskfile task flux:bootstrap: sops --decrypt kubernetes/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f - at .taskfiles/flux/Taskfile.yaml:10)"},
			found: []wantFinding{{RaceDep, "kubernetes/flux/config/cluster.yaml:18: Kustomization flux-system/cluster substitutes from ConfigMap/flux-system/cluster-settings, which it applies itself: a changed knob is substituted one reconcile late"}},
			not:   []string{"cannot come up", "deadlocks"}},
		{name: "taskfile: the settings line removed, bootstrap up seeds the root's vars", layout: "taskfile", edits: []edit{settingsLine},
			id: "check.race/flux-system/cluster", verdict: verify.Warn,
			found: []wantFinding{{RaceDep, "kubernetes/flux/config/cluster.yaml:18: root Kustomization flux-system/cluster substitutes from ConfigMap/flux-system/cluster-settings (kubernetes/flux/vars/cluster-settings.yaml:2), which only it applies: a plain flux bootstrap deadlocks here — kustomize-controller loads substituteFrom before it applies anything and fails the build (substitute from 'ConfigMap/cluster-settings' error: configmaps \"cluster-settings\" not found); bootstrap up seeds ConfigMap/flux-system/cluster-settings from kubernetes/flux/vars/cluster-settings.yaml before the root's first reconcile"}},
			not:   []string{"cluster-settings, which only flux-system/cluster applies, is seeded"}},
		{name: "taskfile: a non-root substituting from what only it applies cannot come up", layout: "taskfile", edits: appsSettings,
			id: "check.race/flux-system/cluster-apps", verdict: verify.Fail,
			found: []wantFinding{{RaceDep, "Kustomization flux-system/cluster-apps substitutes from ConfigMap/flux-system/apps-settings (kubernetes/apps/default/settings.yaml:1), which only it applies and nothing else creates: it cannot come up on a fresh cluster"}}},
		{name: "taskfile: a non-root's object the Taskfile creates", layout: "taskfile",
			edits: append(appsSettings, edit{fluxTasks, "      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/flux/config\n", "      - kubectl apply -f {{.KUBERNETES_DIR}}/apps/default/settings.yaml\n      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/flux/config\n"}),
			id:    "check.race/flux-system/cluster-apps", verdict: verify.Fail, // still the cross-Kustomization races of cluster-settings
			want: []string{"ConfigMap/flux-system/apps-settings, which only flux-system/cluster-apps applies, is seeded by the repository's bootstrap (Taskfile task flux:bootstrap: kubectl apply -f kubernetes/apps/default/settings.yaml at .taskfiles/flux/Taskfile.yaml:12)"},
			not:  []string{"apps-settings (kubernetes/apps/default/settings.yaml:1), which only it applies and nothing else creates"}},
		// A commit-time race on what the bring-up seeds: check fails it;
		// the static phase of up, which seeds it, does not refuse the
		// bring-up for it (a warning), unless one object is not seeded.
		{name: "taskfile: cluster-apps races the root's vars on a later commit", layout: "taskfile",
			id: "check.race/flux-system/cluster-apps", verdict: verify.Fail,
			found: []wantFinding{{RaceDep, "Kustomization flux-system/cluster-apps substitutes from ConfigMap/flux-system/cluster-settings (kubernetes/flux/vars/cluster-settings.yaml:2), applied by flux-system/cluster, without depending on it through same-source dependsOn: a knob added in one commit renders as missing (or empty) until flux-system/cluster applies it"}},
			not:   []string{"not on this bring-up"}},
		{name: "taskfile: up seeds them, the race is not this bring-up's", layout: "taskfile",
			bringUp: map[string]string{"ConfigMap/flux-system/cluster-settings": "seeded", "Secret/flux-system/cluster-secrets": "seeded"},
			id:      "check.race/flux-system/cluster-apps", verdict: verify.Warn,
			found: []wantFinding{{RaceDep, "until flux-system/cluster applies it — not on this bring-up: ConfigMap/flux-system/cluster-settings exists before the root's first reconcile (seeded); bootstrap check fails it for the commits after"}}},
		{name: "taskfile: one object not seeded still races the bring-up", layout: "taskfile",
			bringUp: map[string]string{"ConfigMap/flux-system/cluster-settings": "seeded"},
			id:      "check.race/flux-system/cluster-apps", verdict: verify.Fail,
			found: []wantFinding{{RaceDep, "Kustomization flux-system/cluster-apps substitutes from Secret/flux-system/cluster-secrets (kubernetes/flux/vars/cluster-secrets.sops.yaml:1), applied by flux-system/cluster, without depending on it through same-source dependsOn: a knob added in one commit renders as missing (or empty) until flux-system/cluster applies it"}}},
		// Issue 55 item 6: a Secret an ExternalSecret makes from a secret
		// manager: no commit makes its values exist and no dependsOn on
		// its applier orders external-secrets' sync — no [race]; the same
		// Secret committed races as any (the rows above).
		{name: "taskfile: a Secret from a secret manager opens no commit-time race", layout: "taskfile", edits: []edit{
			{"kubernetes/flux/vars/external.yaml", "", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: cluster-external\n  namespace: flux-system\nspec:\n  secretStoreRef:\n    kind: ClusterSecretStore\n    name: onepassword\n  target:\n    name: cluster-external\n  data:\n    - secretKey: EXTERNAL_TOKEN\n      remoteRef:\n        key: cluster\n"},
			{"kubernetes/flux/vars/kustomization.yaml", "  - ./cluster-settings.yaml\n", "  - ./cluster-settings.yaml\n  - ./external.yaml\n"},
			{"kubernetes/flux/apps.yaml", "      - kind: Secret\n        name: cluster-secrets\n  patches:", "      - kind: Secret\n        name: cluster-secrets\n      - kind: Secret\n        name: cluster-external\n  patches:"}},
			id: "check.race/flux-system/cluster-apps", verdict: verify.Fail, // the committed vars still race
			want: []string{"Secret/flux-system/cluster-external is made by ExternalSecret flux-system/cluster-external (kubernetes/flux/vars/external.yaml:1) from a secret manager: its values reach the Secret when external-secrets syncs it"},
			not:  []string{"substitutes from Secret/flux-system/cluster-external ("}},
		// Issue 56 item 1: one malformed object is a finding, not the end
		// of the report. A label that is no string: kustomize-controller
		// v1.9.5 applies the object with none of its labels (e2e
		// TestMalformedMetadata) — a warning, echo still checked.
		{name: "a Kustomization whose label is a boolean: a warning, the rest checked", layout: "taskfile",
			edits: []edit{{"kubernetes/apps/default/echo/ks.yaml", "  name: echo\n", "  name: echo\n  labels:\n    team: web\n    enabled: true\n"}},
			id:    "check.substitution/flux-system/cluster-apps", verdict: verify.Warn,
			found: []wantFinding{{Schema, `kubernetes/apps/default/echo/ks.yaml:8: Kustomization/flux-system/echo: label enabled is not a string (true): Kustomization flux-system/cluster-apps applies it with none of its own labels`}},
			not:   []string{"unrecognized type", "not built"}},
		{name: "a Kustomization whose labels are strings: no warning", layout: "taskfile",
			edits: []edit{{"kubernetes/apps/default/echo/ks.yaml", "  name: echo\n", "  name: echo\n  labels:\n    team: web\n    enabled: \"true\"\n"}},
			id:    "check.substitution/flux-system/cluster-apps", verdict: verify.Pass,
			not: []string{"is not a string"}},
		{name: "a number in postBuild.substitute: the API server refuses it, the applier fails, the rest checked", layout: "taskfile",
			edits: []edit{{"kubernetes/apps/default/echo/ks.yaml", "  interval: 30m\n", "  interval: 30m\n  postBuild:\n    substitute:\n      REPLICAS: 5\n"}},
			id:    "check.substitution/flux-system/cluster-apps", verdict: verify.Fail,
			found: []wantFinding{{Schema, "Kustomization/flux-system/echo is refused by the API server (Flux v2.4.0's CRDs): spec.postBuild.substitute.REPLICAS: Invalid value: \"integer\""}},
			not:   []string{"not built"}},
		{name: "a duplicate key: the controller's substitution fails it", layout: "taskfile",
			edits: []edit{{"kubernetes/apps/default/echo/app/configmap.yaml", "  name: echo\n", "  name: echo\n  labels:\n    a: b\n  labels:\n    c: d\n"}},
			id:    "check.substitution/flux-system/echo", verdict: verify.Fail,
			found: []wantFinding{{ParseError, `post build failed for 'ConfigMap/default/echo': yaml: unmarshal errors:`}}},
		{name: "taskfile: the release the bootstrap's Flux install pins", layout: "taskfile",
			id: "check.flux-release", verdict: verify.Pass,
			want: []string{"Flux v2.4.0, declared by the Flux install the repository's bootstrap applies (Taskfile task flux:bootstrap: kubectl apply --kustomize kubernetes/bootstrap/flux (.taskfiles/flux/Taskfile.yaml:8)) at kubernetes/bootstrap/flux/kustomization.yaml:5",
				"bootstrap: Taskfile task flux:bootstrap: kubectl apply -f kubernetes/flux/vars/cluster-settings.yaml creates ConfigMap/flux-system/cluster-settings at .taskfiles/flux/Taskfile.yaml:11"}},
		{name: "taskfile: the install line removed, the default", layout: "taskfile",
			edits: []edit{{fluxTasks, "      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/bootstrap/flux\n", ""}},
			id:    "check.flux-release", verdict: verify.Pass,
			want: []string{"(the default: the repository declares no release)"}},
		{name: "helmfile: cluster-secrets comes from the resources template", layout: "helmfile", path: "kubernetes/flux/cluster",
			id: "check.knobs/Secret/flux-system/cluster-secrets", verdict: verify.Pass,
			want: []string{"Secret/flux-system/cluster-secrets is seeded by the repository's bootstrap: Secret/flux-system/cluster-secrets (created before Flux by the repository's bootstrap: resources template bootstrap/resources.yaml.j2 (rendered and applied by the bootstrap; values not read) at bootstrap/resources.yaml.j2:16); keys SECRET_ACME_EMAIL, SECRET_CLOUDFLARE_TOKEN, SECRET_DOMAIN"}},
		{name: "helmfile: the template's Secret removed, a prerequisite again", layout: "helmfile", path: "kubernetes/flux/cluster",
			edits: []edit{{"bootstrap/resources.yaml.j2", "  name: cluster-secrets\n", "  name: other-secrets\n"}},
			id:    "check.knobs/Secret/flux-system/cluster-secrets", verdict: verify.Warn,
			found: []wantFinding{{Prerequisite, "prerequisite Secret/flux-system/cluster-secrets (keys SECRET_ACME_EMAIL, SECRET_DOMAIN used)"}}},
		{name: "helmfile: a key the template does not create is undefined", layout: "helmfile", path: "kubernetes/flux/cluster",
			edits: []edit{{"kubernetes/apps/default/echo/app/configmap.yaml", "${SECRET_ACME_EMAIL}", "${SECRET_ACME_MAIL}"}},
			id:    "check.substitution/flux-system/echo", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "${SECRET_ACME_MAIL} in ConfigMap/default/echo is not defined"}}},
		// Issue 54 item 6: a mutating admission webhook or policy the
		// bootstrap installs (a policy chart's values) or the tree applies
		// may write the variable into the Kustomization: the undefined
		// variable is not judged a failure, and the report names it.
		{name: "helmfile: a Kyverno mutate policy the bootstrap installs may define it", layout: "helmfile", path: "kubernetes/flux/cluster",
			edits: append([]edit{undefinedMail}, kyvernoRelease...),
			id:    "check.substitution/flux-system/echo", verdict: verify.Warn,
			found: []wantFinding{{Undefined, "unless Kyverno ClusterPolicy flux-cluster-vars (in the values of helmfile release kyverno/cluster-policies"}}},
		{name: "helmfile: the policy excludes flux-system, where echo is: a failure", layout: "helmfile", path: "kubernetes/flux/cluster",
			edits: []edit{undefinedMail, kyvernoRelease[0], {kyvernoRelease[1].file, "", strings.Replace(kyvernoRelease[1].new, "namespaces: [kube-system]", "namespaces: [flux-system]", 1)}},
			id:    "check.substitution/flux-system/echo", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "${SECRET_ACME_MAIL} in ConfigMap/default/echo is not defined"}}, not: []string{"unless Kyverno"}},
		{name: "helmfile: a validate-only policy mutates nothing: a failure", layout: "helmfile", path: "kubernetes/flux/cluster",
			edits: []edit{undefinedMail, kyvernoRelease[0], {kyvernoRelease[1].file, "", strings.Replace(kyvernoRelease[1].new, "mutate:", "validate:", 1)}},
			id:    "check.substitution/flux-system/echo", verdict: verify.Fail, not: []string{"unless Kyverno"}},
		{name: "helmfile: a MutatingWebhookConfiguration the tree applies may define it", layout: "helmfile", path: "kubernetes/flux/cluster",
			edits: []edit{undefinedMail, {"kubernetes/apps/default/webhook.yaml", "", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: flux-vars\nwebhooks:\n  - name: vars.example.invalid\n    rules:\n      - apiGroups: [kustomize.toolkit.fluxcd.io]\n        apiVersions: [v1]\n        resources: [kustomizations]\n        operations: [CREATE, UPDATE]\n    clientConfig:\n      service: {name: vars, namespace: kube-system}\n    admissionReviewVersions: [v1]\n    sideEffects: None\n"},
				{"kubernetes/apps/default/kustomization.yaml", "resources:\n", "resources:\n  - ./webhook.yaml\n"}},
			id: "check.substitution/flux-system/echo", verdict: verify.Warn,
			found: []wantFinding{{Undefined, "unless MutatingWebhookConfiguration flux-vars (kubernetes/apps/default/webhook.yaml:1) defines it"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyLayout(t, tc.layout, tc.edits...)
			o := Options{Options: fluxrepo.Options{Repo: repo, Path: tc.path, RootName: tc.root}, NoCompare: true, BringUp: tc.bringUp}
			if tc.layout == "taskfile" {
				o.Path, o.RootName = "kubernetes/flux", "cluster"
			}
			r, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			c := checkOf(rep, tc.id)
			if c.ID == "" || c.Verdict != tc.verdict {
				t.Fatalf("want %s %s; got:\n%s", tc.id, tc.verdict, dump(rep))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(c), w) {
					t.Errorf("want %s containing %q; got:\n%s", tc.id, w, text(c))
				}
			}
			for _, w := range tc.found {
				if !hasFinding(c, w.det, w.text) {
					t.Errorf("want %s with %s; got:\n%s", tc.id, w, text(c))
				}
			}
			for _, n := range tc.not {
				if strings.Contains(dump(rep), n) {
					t.Errorf("%q in:\n%s", n, dump(rep))
				}
			}
		})
	}
}
