package agekey_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	. "github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The fake client is no API server (its server-side apply always reports
// "created"); these tests cover the decisions around the apply. The
// end-to-end suite proves created/unchanged against a real one.
func fakeCluster(t *testing.T, objs ...client.Object) (client.Client, *ssa.ResourceManager) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
	return c, ssa.NewResourceManager(c, polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{}), ssa.Owner{Field: "bootstrap"})
}

func existing(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: DefaultSecretName}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func live(t *testing.T, c client.Client) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: DefaultNamespace, Name: DefaultSecretName}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestRotation(t *testing.T) {
	isolate(t)
	oldK, newK := newKey(t), newKey(t)
	opts := InstallOptions{Namespace: DefaultNamespace, Name: DefaultSecretName}

	t.Run("different key without --rotate is refused", func(t *testing.T) {
		c, rm := fakeCluster(t, existing(map[string]string{"identity.agekey": oldK.file}))
		cs, changed, err := InstallSecret(context.Background(), c, rm, parse(t, newK.file), opts)
		if err != nil {
			t.Fatal(err)
		}
		rc := find(t, cs, "age-key.rotation")
		if rc.Verdict != verify.Fail || changed || !strings.Contains(rc.Message, "--rotate") || !strings.Contains(rc.Message, oldK.recipient) {
			t.Fatalf("%+v changed=%t", rc, changed)
		}
		if got := string(live(t, c).Data["identity.agekey"]); got != oldK.file || len(live(t, c).Data) != 1 {
			t.Error("the Secret changed although the rotation was refused")
		}
		reportHygiene(t, report(cs))
	})
	t.Run("unparseable Secret needs --rotate too", func(t *testing.T) {
		c, rm := fakeCluster(t, existing(map[string]string{"age.agekey": oldK.recipient}))
		cs, _, _ := InstallSecret(context.Background(), c, rm, parse(t, newK.file), opts)
		if rc := find(t, cs, "age-key.rotation"); rc.Verdict != verify.Fail || !strings.Contains(rc.Message, "cannot parse") {
			t.Fatalf("%+v", rc)
		}
	})
	t.Run("--rotate replaces the key and removes old data keys", func(t *testing.T) {
		c, rm := fakeCluster(t, existing(map[string]string{"identity.agekey": oldK.file}))
		o := opts
		o.Rotate = true
		cs, changed, err := InstallSecret(context.Background(), c, rm, parse(t, newK.file), o)
		if err != nil || !changed {
			t.Fatalf("changed=%t err=%v", changed, err)
		}
		if rc := find(t, cs, "age-key.rotation"); rc.Verdict != verify.Pass || !strings.Contains(rc.Message, oldK.recipient) {
			t.Errorf("%+v", rc)
		}
		s := live(t, c)
		ids, keys, err := SecretIdentities(s)
		if err != nil || len(keys) != 1 || keys[0] != DataKey || !ids.Has(newK.recipient) || ids.Has(oldK.recipient) {
			t.Fatalf("after rotation: keys %v err %v", keys, err)
		}
	})
	t.Run("same key: no rotation needed", func(t *testing.T) {
		c, rm := fakeCluster(t, existing(map[string]string{DataKey: string(parse(t, oldK.file).SecretData())}))
		cs, _, err := InstallSecret(context.Background(), c, rm, parse(t, oldK.file), opts)
		if err != nil || find(t, cs, "age-key.rotation").Verdict != verify.Pass {
			t.Fatalf("%v %v", cs, err)
		}
	})
}

func TestInstallAndVerifyFlow(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	c, rm := fakeCluster(t)
	connect := func() (client.Client, *ssa.ResourceManager, error) { return c, rm, nil }
	o := Options{Repo: f.repo, Path: "clusters/dev"}

	r := verify.NewReport("age-key verify")
	if err := Verify(context.Background(), r, o, connect); err != nil {
		t.Fatal(err)
	}
	if ck := find(t, r.Checks, "age-key.secret"); ck.Verdict != verify.Fail || !strings.Contains(ck.Message, "not found") {
		t.Fatalf("verify before install: %+v", ck)
	}

	r = verify.NewReport("age-key")
	if err := Install(context.Background(), r, Input{Flag: "-", Stdin: strings.NewReader(f.dev.file)}, o, connect); err != nil {
		t.Fatal(err)
	}
	if session.ReportCode(r) != session.ExitOK || !r.Changed || find(t, r.Checks, "age-key.installed-decrypts").Verdict != verify.Pass {
		t.Fatalf("install: exit %d %v", session.ReportCode(r), verdicts(r.Checks))
	}
	reportHygiene(t, r)

	r = verify.NewReport("age-key verify")
	if err := Verify(context.Background(), r, o, connect); err != nil {
		t.Fatal(err)
	}
	if session.ReportCode(r) != session.ExitOK || find(t, r.Checks, "age-key.decrypt/apps/dev/secret.sops.yaml").Verdict != verify.Pass {
		t.Fatalf("verify: %v", verdicts(r.Checks))
	}
	// Negative: the same Secret does not cover prod.
	r = verify.NewReport("age-key verify")
	o.Path = "clusters/prod"
	if err := Verify(context.Background(), r, o, connect); err != nil {
		t.Fatal(err)
	}
	if session.ReportCode(r) != session.ExitFailed || find(t, r.Checks, "age-key.recipient/apps/prod/secret.sops.yaml").Verdict != verify.Fail {
		t.Fatalf("verify prod with dev's key: %v", verdicts(r.Checks))
	}
	reportHygiene(t, r)
}

// Install runs the install phase alone into r (what `bootstrap age-key` does).
func Install(ctx context.Context, r *verify.Report, in Input, o Options, connect Connect) error {
	return pipeline.Execute(ctx, &pipeline.Run{Report: r}, NewInstallPhase(in, o, connect))
}

// Verify runs the verify phase alone into r (what `bootstrap age-key verify` does).
func Verify(ctx context.Context, r *verify.Report, o Options, connect Connect) error {
	return pipeline.Execute(ctx, &pipeline.Run{Report: r}, NewVerifyPhase(o, connect))
}

// status asks for the Secret only where the environment needs it; `age-key
// verify` always does, and an environment with SOPS files always needs it.
func TestVerifyIfNeeded(t *testing.T) {
	isolate(t)
	f := newFixture(t, nil)
	for _, c := range []struct {
		name, repo string
		ifNeeded   bool
		want       verify.Verdict
	}{
		{"status, nothing decrypts", filepath.Join("..", "..", "testdata", "helm"), true, verify.Pass},
		{"verify, nothing decrypts", filepath.Join("..", "..", "testdata", "helm"), false, verify.Fail},
		{"status, SOPS files", f.repo, true, verify.Fail},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, rm := fakeCluster(t)
			r := verify.NewReport("status")
			o := Options{Repo: c.repo, Path: "clusters/dev", IfNeeded: c.ifNeeded}
			if err := Verify(context.Background(), r, o, func() (client.Client, *ssa.ResourceManager, error) { return cl, rm, nil }); err != nil {
				t.Fatal(err)
			}
			if ck := find(t, r.Checks, "age-key.secret"); ck.Verdict != c.want {
				t.Fatalf("age-key.secret: %s %s, want %s", ck.Verdict, ck.Message, c.want)
			}
		})
	}
}
