package agekey_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestPlanSecret: a dry run plans the Secret as the apply would write it
// and changes nothing: absent, created (and staged for the phases after);
// different identities without --rotate, the rotation gate fails and
// nothing is staged. (An existing Secret is diffed by a server-side dry
// run, which the fake client cannot judge: the e2e suite proves it.)
func TestPlanSecret(t *testing.T) {
	isolate(t)
	oldK, newK := newKey(t), newKey(t)
	opts := InstallOptions{Namespace: DefaultNamespace, Name: DefaultSecretName}
	for _, tt := range []struct {
		name     string
		existing map[string]string
		action   string
		rotation verify.Verdict // "" for no rotation gate
		staged   bool
	}{
		{"absent: created", nil, "created", "", true},
		{"different key without --rotate: refused", map[string]string{"identity.agekey": oldK.file}, "skipped", verify.Fail, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, rm := fakeCluster(t)
			if tt.existing != nil {
				c, rm = fakeCluster(t, existing(tt.existing))
			}
			cs, oc, obj, err := PlanSecret(context.Background(), c, rm, parse(t, newK.file), opts)
			if err != nil {
				t.Fatal(err)
			}
			if oc.Object != "Secret/flux-system/sops-age" || string(oc.Action) != tt.action || (obj != nil) != tt.staged {
				t.Fatalf("plan %+v, staged %t; want %s, staged %t", oc, obj != nil, tt.action, tt.staged)
			}
			if tt.rotation != "" {
				if rc := find(t, cs, "age-key.rotation"); rc.Verdict != tt.rotation || !strings.Contains(rc.Message, "--rotate") {
					t.Fatalf("%+v", rc)
				}
			}
			if tt.existing != nil {
				if got := string(live(t, c).Data["identity.agekey"]); got != oldK.file {
					t.Error("the dry run changed the Secret")
				}
			}
		})
	}
}
