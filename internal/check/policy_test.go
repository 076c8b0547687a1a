package check

import (
	"context"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestPolicy: the repository's .bootstrap.yaml makes the check stricter or
// looser, and every finding it changes is still reported, allowed with its
// reason or required by policy.
func TestPolicy(t *testing.T) {
	t.Parallel()
	const path = "kubernetes/flux/cluster"
	for _, tc := range []struct {
		name   string
		policy string
		edits  []edit
		exit   int
		id     string
		// verdict of id, and texts of its message or evidence.
		verdict verify.Verdict
		want    []string
		// found: the findings it must have.
		found []wantFinding
		// finding: a Finding whose Policy contains this.
		finding string
	}{
		{name: "stricter: every default on an undefined name fails (the seed's homelab)",
			policy: "version: 1\ndefaultOperators:\n  onUndefined: fail\n",
			exit:   session.ExitFailed, id: "check.substitution/default/echo", verdict: verify.Fail,
			want: []string{"required by policy: .bootstrap.yaml:3 onUndefined: fail"}, found: []wantFinding{{DefaultOp, "${VOLSYNC_STORAGECLASS:=…}"}},
			finding: "required by policy"},
		{name: "looser: names allowed with a reason",
			policy: "version: 1\ndefaultOperators:\n  allow:\n    - names: [VOLSYNC_*]\n      reason: the volsync component's defaults are the house defaults\n",
			exit:   session.ExitOK, id: "check.substitution/default/echo", verdict: verify.Pass,
			want:    []string{"allowed by .bootstrap.yaml:4 (the volsync component's defaults are the house defaults): kubernetes/components/volsync/pvc.yaml:11: "},
			found:   []wantFinding{{DefaultOp, "kubernetes/components/volsync/pvc.yaml:11: ${VOLSYNC_STORAGECLASS:=…}"}},
			finding: "allowed by .bootstrap.yaml:4"},
		{name: "a declared prerequisite passes, with its keys",
			policy: "version: 1\nprerequisites:\n  declared:\n    - {kind: Secret, namespace: default, name: cluster-secrets, keys: [SECRET_DOMAIN], createdBy: the Ansible bootstrap play}\n",
			exit:   session.ExitOK, id: "check.knobs/Secret/default/cluster-secrets", verdict: verify.Pass,
			want: []string{"Secret/default/cluster-secrets is a declared prerequisite: Secret/default/cluster-secrets (declared in .bootstrap.yaml:4, made by the Ansible bootstrap play); keys SECRET_DOMAIN"}},
		{name: "a declared prerequisite's keys catch a typo",
			policy: "version: 1\nprerequisites:\n  declared:\n    - {kind: Secret, namespace: default, name: cluster-secrets, keys: [SECRET_DOMAIN], createdBy: the Ansible bootstrap play}\n",
			// echo-env's dataFrom could hold any key: closed here.
			edits: []edit{{"kubernetes/apps/default/echo/app/helmrelease.yaml", "${SECRET_DOMAIN}", "${SECRET_DOMIAN}"},
				{"kubernetes/apps/default/echo-config/app/externalsecret.yaml", "  dataFrom:\n    - extract:\n        key: echo\n", ""}},
			exit: session.ExitFailed, id: "check.substitution/default/echo", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "${SECRET_DOMIAN} in HelmRelease/default/echo is not defined"}}},
		{name: "undeclared prerequisites fail by policy",
			policy: "version: 1\nprerequisites:\n  undeclared: fail\n",
			exit:   session.ExitFailed, id: "check.knobs/Secret/flux-system/cluster-secrets", verdict: verify.Fail,
			want: []string{"required by policy: .bootstrap.yaml:3 undeclared: fail"}, found: []wantFinding{{Prerequisite, "prerequisite Secret/flux-system/cluster-secrets"}},
			finding: "required by policy"},
		{name: "an advisory turned off is still listed",
			policy: "version: 1\nadvisories:\n  disable:\n    - detector: prerequisite\n      reason: cluster-secrets is made by the bootstrap play\n",
			exit:   session.ExitOK, id: "check.knobs/Secret/flux-system/cluster-secrets", verdict: verify.Pass,
			want:    []string{"allowed by .bootstrap.yaml:4 (advisory off: cluster-secrets is made by the bootstrap play): kubernetes/flux/cluster/ks.yaml:17: "},
			found:   []wantFinding{{Prerequisite, "kubernetes/flux/cluster/ks.yaml:17: "}},
			finding: "advisory off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyLayout(t, "operator", append(tc.edits, edit{".bootstrap.yaml", "", tc.policy})...)
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: path}})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			if session.ReportCode(rep) != tc.exit {
				t.Fatalf("exit %d, want %d:\n%s", session.ReportCode(rep), tc.exit, dump(rep))
			}
			found := false
			for _, c := range rep.Checks {
				if c.ID == tc.id {
					found = true
					for _, w := range tc.want {
						if c.Verdict != tc.verdict || !strings.Contains(text(c), w) {
							t.Fatalf("want %s %s containing %q; got:\n%s", tc.id, tc.verdict, w, dump(rep))
						}
					}
					for _, w := range tc.found {
						if c.Verdict != tc.verdict || !hasFinding(c, w.det, w.text) {
							t.Fatalf("want %s %s with %s; got:\n%s", tc.id, tc.verdict, w, dump(rep))
						}
					}
				}
			}
			if !found {
				t.Fatalf("no %s:\n%s", tc.id, dump(rep))
			}
			if tc.finding != "" {
				ok := false
				for _, f := range r.Findings {
					ok = ok || strings.Contains(f.Policy, tc.finding)
				}
				if !ok {
					t.Errorf("no finding with policy %q: %+v", tc.finding, r.Findings)
				}
			}
		})
	}
}

// TestPolicyInputErrors: the policy is held to its schema before the
// repository is read, each error naming the file, the line and the fix.
func TestPolicyInputErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ policy, want string }{
		{"version: 1\nstrict: true\n", `.bootstrap.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "strict"`},
		{"version: 2\n", ".bootstrap.yaml:1: version 2: this tool reads version: 1"},
		{"version: 1\ndefaultOperators:\n  onUndefined: always\n", `.bootstrap.yaml:3: onUndefined "always": advisory (the default) or fail`},
		{"version: 1\ndefaultOperators:\n  allow:\n    - names: [X]\n", ".bootstrap.yaml:4: an allow entry needs names and a reason"},
		{"version: 1\ndefaultOperators:\n  allow:\n    - names: ['[']\n      reason: r\n", `.bootstrap.yaml:4: name pattern "["`},
		{"version: 1\nprerequisites:\n  declared:\n    - {kind: Secret, name: x, namespace: y}\n", ".bootstrap.yaml:4: a declared prerequisite needs name, namespace and createdBy"},
		{"version: 1\nadvisories:\n  disable:\n    - detector: undefined\n      reason: r\n", `.bootstrap.yaml:4: detector "undefined": one of`},
	} {
		repo := copyLayout(t, "operator", edit{".bootstrap.yaml", "", tc.policy})
		_, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "kubernetes/flux/cluster"}})
		if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want an input error containing %q", tc.policy, err, tc.want)
		}
	}
}
