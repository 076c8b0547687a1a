package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// twoAppliersRepo copies testdata/check/two-appliers and applies ms (a
// mutation of a file that does not exist creates it with new).
func twoAppliersRepo(t *testing.T, ms ...mutation) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("../../testdata/check/two-appliers")); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		p := filepath.Join(dst, m.file)
		b, err := os.ReadFile(p)
		switch {
		case os.IsNotExist(err) && m.old == "":
		case err != nil:
			t.Fatal(err)
		case m.old != "" && !strings.Contains(string(b), m.old):
			t.Fatalf("%s does not contain %q", m.file, m.old)
		}
		s := string(b) + m.new
		if m.old != "" {
			s = strings.Replace(string(b), m.old, m.new, 1)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// The [two-appliers] detector (issue #45, item 5). What the controller
// does with one object two Kustomizations apply, kustomize-controller
// v1.9.5 internal/controller/kustomization_controller.go: apply (server-side
// apply, one field manager r.ControllerName for every Kustomization, owner
// labels set by fluxcd/pkg/ssa v0.76 ResourceManager) and deleteObjects
// (prune deletes only objects labelled with the pruning Kustomization,
// ssa.DeleteOptions.Inclusions: manager.GetOwnerLabels). Why a directory
// without kustomization.yaml applies a subdirectory: fluxcd/pkg/kustomize
// v1.35 Generator.findOrGenerateKustomization and scanManifests.
func TestTwoAppliers(t *testing.T) {
	const rootKs = "clusters/dev/kustomization.yaml"
	listed := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system\n  - issuers.yaml\n"
	tests := []struct {
		name    string
		ms      []mutation
		disable []verify.Detector
		verdict verify.Verdict
		// fails and warns are the [two-appliers] findings by verdict.
		fails, warns int
		// sarif are the SARIF results (errors, notes): one per block.
		sarif     [2]int
		want, not []string
	}{
		{name: "as committed: a directory without kustomization.yaml applies another Kustomization's path",
			verdict: verify.Fail, fails: 1, warns: 1, sarif: [2]int{1, 1},
			want: []string{
				`ClusterIssuer.cert-manager.io letsencrypt is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers with different content after substitution (spec.acme.email is "${email}" from Kustomization flux-system/flux-system, "ops@example.invalid" from Kustomization flux-system/issuers)`,
				"Cause: clusters/dev has no kustomization.yaml, so the build kustomize-controller generates for Kustomization flux-system/flux-system applies every manifest below it, clusters/dev/issuers (the path of Kustomization flux-system/issuers) included",
				"Namespace cert-manager is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers, with the same content",
				"add a kustomization.yaml to clusters/dev listing only what Kustomization flux-system/flux-system should apply, so its path stops including clusters/dev/issuers",
			}},
		{name: "the subdirectory has its own kustomization.yaml: the generated build lists it whole",
			ms:      []mutation{{"clusters/dev/issuers/kustomization.yaml", "", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n  - cluster-issuer.yaml\n"}},
			verdict: verify.Fail, fails: 1, warns: 1, sarif: [2]int{1, 1},
			want: []string{"Cause: clusters/dev has no kustomization.yaml, so the build kustomize-controller generates for Kustomization flux-system/flux-system applies every manifest below it, clusters/dev/issuers (the path of Kustomization flux-system/issuers) included"}},
		{name: "a kustomization.yaml in the root lists what the root applies: one applier each",
			ms: []mutation{{rootKs, "", listed}}, verdict: verify.Pass},
		{name: "the detector off",
			disable: []verify.Detector{TwoAppliers}, verdict: verify.Pass},
		{name: "nothing substitutes: the same content twice is a warning",
			ms:      []mutation{{"clusters/dev/issuers.yaml", "  postBuild:\n    substitute:\n      email: ops@example.invalid\n", ""}},
			verdict: verify.Warn, warns: 2, sarif: [2]int{0, 1},
			want: []string{"ClusterIssuer.cert-manager.io letsencrypt is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers, with the same content"}},
		{name: "an object the controller leaves alone (ssa: IfNotPresent) is no finding",
			ms: []mutation{{"clusters/dev/issuers/namespace.yaml", "  name: cert-manager\n",
				"  name: cert-manager\n  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n"}},
			verdict: verify.Fail, fails: 1, sarif: [2]int{1, 0}, not: []string{"Namespace cert-manager is applied"}},
		{name: "two Kustomizations of one path: the pair is the cause, no directory named",
			ms: []mutation{{rootKs, "", listed}, {"clusters/dev/issuers.yaml", "", `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: issuers-again
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/dev/issuers
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`}},
			verdict: verify.Fail, fails: 1, warns: 1, sarif: [2]int{1, 1},
			want: []string{"is applied by Kustomization flux-system/issuers and by Kustomization flux-system/issuers-again with different content after substitution", "leave ClusterIssuer.cert-manager.io letsencrypt in one Kustomization's path only"},
			not:  []string{"has no kustomization.yaml"}},
		// Issue 55 item 1: a difference in labels or annotations only (a
		// shared component's commonLabels stamped per app) flips with
		// every reconcile as any shared object's owner labels do: a
		// warning; a difference in what the object does stays a FAIL
		// (the rows above).
		{name: "a difference in labels only is a warning",
			ms:      []mutation{{"clusters/dev/issuers.yaml", "  postBuild:\n    substitute:\n      email: ops@example.invalid\n", "  commonMetadata:\n    labels:\n      app.kubernetes.io/part-of: issuers\n"}},
			verdict: verify.Warn, warns: 2, sarif: [2]int{0, 1},
			want: []string{"ClusterIssuer.cert-manager.io letsencrypt is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers, differing only in its labels or annotations (metadata.labels"}},
		{name: "a difference in labels and in spec is a FAIL",
			ms:      []mutation{{"clusters/dev/issuers.yaml", "  postBuild:\n", "  commonMetadata:\n    labels:\n      app.kubernetes.io/part-of: issuers\n  postBuild:\n"}},
			verdict: verify.Fail, fails: 1, warns: 1, sarif: [2]int{1, 1},
			want: []string{"ClusterIssuer.cert-manager.io letsencrypt is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers with different content after substitution"}},
		// A Kustomization with spec.kubeConfig applies to another cluster
		// (hub and spoke): its objects are not the hub's.
		{name: "a Kustomization applying to another cluster (spec.kubeConfig) shares no object",
			ms:      []mutation{{"clusters/dev/issuers.yaml", "  prune: true\n", "  prune: true\n  kubeConfig:\n    secretRef:\n      name: spoke-kubeconfig\n"}},
			verdict: verify.Pass, not: []string{"is applied by"}},
		// Issue 55 item 7: a path listing the file that declares its own
		// Kustomization applies itself; the parent's missing
		// kustomization.yaml is not the cause, and adding one would not fix it.
		{name: "a Kustomization whose path lists its own file applies itself",
			ms: []mutation{{"clusters/dev/imagemaid/kustomization.yaml", "", "resources:\n  - ./ks.yaml\n  - ./cm.yaml\n"},
				{"clusters/dev/imagemaid/ks.yaml", "", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: imagemaid\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev/imagemaid\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"},
				{"clusters/dev/imagemaid/cm.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: imagemaid\n  namespace: default\n"}},
			verdict: verify.Fail, fails: 1, warns: 3, sarif: [2]int{1, 3},
			want: []string{"Kustomization.kustomize.toolkit.fluxcd.io flux-system/imagemaid is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/imagemaid, with the same content",
				"Cause: the path of Kustomization flux-system/imagemaid (clusters/dev/imagemaid) renders Kustomization flux-system/imagemaid itself, so it applies itself besides its parent (clusters/dev/imagemaid/ks.yaml)",
				"fix: keep clusters/dev/imagemaid/ks.yaml out of its own path: move what it deploys to a subdirectory (e.g. clusters/dev/imagemaid/app) and point spec.path there, or drop ks.yaml from clusters/dev/imagemaid/kustomization.yaml"}},
		// Issue 55 item 2: the child stamps its targetNamespace on the
		// ClusterIssuer (kustomize assumes an unknown kind namespaced); the
		// API server clears the namespace of a cluster-scoped object, so it
		// is still the object the parent applies literally.
		{name: "a cluster-scoped object a child's targetNamespace stamps is still the same object",
			ms:      []mutation{{"clusters/dev/issuers.yaml", "  prune: true\n", "  prune: true\n  targetNamespace: cert-manager\n"}},
			verdict: verify.Fail, fails: 1, warns: 1, sarif: [2]int{1, 1},
			want: []string{`ClusterIssuer.cert-manager.io letsencrypt is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers with different content after substitution (spec.acme.email is "${email}"`}},
		{name: "a cluster-scoped object differing only in the namespace a targetNamespace stamps: the same content",
			ms: []mutation{{"clusters/dev/issuers.yaml", "  prune: true\n", "  prune: true\n  targetNamespace: cert-manager\n"},
				{"clusters/dev/issuers.yaml", "  postBuild:\n    substitute:\n      email: ops@example.invalid\n", ""}},
			verdict: verify.Warn, warns: 2, sarif: [2]int{0, 1},
			want: []string{"ClusterIssuer.cert-manager.io letsencrypt is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers, with the same content"}},
		{name: "a Secret's differing values are not shown",
			ms:      []mutation{{"clusters/dev/issuers/secret.yaml", "", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: acme\n  namespace: cert-manager\nstringData:\n  token: ${email}-token\n"}},
			verdict: verify.Fail, fails: 2, warns: 1, sarif: [2]int{1, 1},
			want: []string{"Secret cert-manager/acme is applied by Kustomization flux-system/flux-system and by Kustomization flux-system/issuers with different content after substitution (stringData.token):"},
			not:  []string{"-token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Options: fluxrepo.Options{Repo: twoAppliersRepo(t, tc.ms...), Path: "clusters/dev"}, Disable: map[verify.Detector]bool{}}
			for _, d := range tc.disable {
				o.Disable[d] = true
			}
			r, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			c := checkOf(rep, Graph.ID)
			if c.Verdict != tc.verdict {
				t.Errorf("check.graph is %s, want %s:\n%s", c.Verdict, tc.verdict, dump(rep))
			}
			var fails, warns int
			var msgs []string
			for _, f := range r.Findings {
				if f.Detector != TwoAppliers {
					continue
				}
				msgs = append(msgs, f.Message+" fix: "+f.Fix)
				switch f.Verdict {
				case verify.Fail:
					fails++
				case verify.Warn:
					warns++
				}
			}
			if fails != tc.fails || warns != tc.warns {
				t.Errorf("[two-appliers]: %d fail, %d warn; want %d, %d:\n%s", fails, warns, tc.fails, tc.warns, strings.Join(msgs, "\n"))
			}
			res := sarifResults(t, r)
			if got := [2]int{countRule(res, string(TwoAppliers), "error"), countRule(res, string(TwoAppliers), "note")}; got != tc.sarif {
				t.Errorf("SARIF [two-appliers] results (errors, notes) %v, want %v:\n%+v", got, tc.sarif, res)
			}
			var b strings.Builder
			_ = verify.WriteText(&b, rep)
			// What a user sees: the grouped report, and each finding
			// (JSON, SARIF, --verbose).
			b.WriteString(strings.Join(msgs, "\n"))
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("report has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
