package runner

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const depYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: CTRL, namespace: flux-system}
spec:
  template:
    spec:
      serviceAccountName: CTRL
      containers:
      - name: manager
        image: ghcr.io/fluxcd/CTRL:VERSION
        args:
        - --events-addr=http://notification-controller.flux-system.svc.cluster.local./
        - --watch-all-namespaces
        - --log-level=info
        - --enable-leader-election
        - --storage-path=/data
        - --storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.
        env:
        - name: RUNTIME_NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        - name: TUF_ROOT
          value: /tmp/.sigstore
        - name: GOMEMLIMIT
          valueFrom: {resourceFieldRef: {containerName: manager, resource: limits.memory}}
        - name: GOMAXPROCS
          valueFrom: {resourceFieldRef: {containerName: manager, resource: limits.cpu}}
        resources:
          limits: {cpu: 1000m, memory: 1Gi}
        volumeMounts:
        - {mountPath: /data, name: data}
        - {mountPath: /tmp, name: tmp}
`

func dep(t *testing.T, name, version string, extraArgs ...string) *appsv1.Deployment {
	t.Helper()
	s := strings.ReplaceAll(strings.ReplaceAll(depYAML, "CTRL", name), "VERSION", version)
	d := &appsv1.Deployment{}
	if err := yaml.Unmarshal([]byte(s), d); err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	c.Args = append(c.Args, extraArgs...)
	return d
}

func plan(t *testing.T, d *appsv1.Deployment, ignore bool) *Plan {
	t.Helper()
	p, err := BuildPlan(d, PlanInput{
		Controller: d.Name, Binary: "/bin/" + d.Name, BinaryVersion: "v1.9.5", Dir: "/w",
		Kubeconfig: "/w/kubeconfig", MetricsPort: 1001, HealthPort: 1002, StoragePort: 1003,
		IgnoreDeploymentArgs: ignore,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanKeepsArgsAndRewritesAddresses(t *testing.T) {
	p := plan(t, dep(t, "source-controller", "v1.9.5"), false)
	want := []string{
		"--events-addr=",
		"--watch-all-namespaces",
		"--log-level=info",
		"--storage-path=/w/storage",
		"--storage-adv-addr=127.0.0.1:1003",
		"--health-addr=127.0.0.1:1002",
		"--metrics-addr=127.0.0.1:1001",
		"--storage-addr=127.0.0.1:1003",
	}
	if !slices.Equal(p.Args, want) {
		t.Fatalf("args\n got %q\nwant %q", p.Args, want)
	}
	for _, e := range []string{"RUNTIME_NAMESPACE=flux-system", "TUF_ROOT=/w/volumes/tmp/.sigstore", "GOMEMLIMIT=1073741824", "GOMAXPROCS=1", "KUBECONFIG=/w/kubeconfig"} {
		if !slices.Contains(p.Env, e) {
			t.Errorf("env lacks %s: %q", e, p.Env)
		}
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "--enable-leader-election dropped") {
		t.Errorf("same version: want only the leader-election note, got %q", p.Notes)
	}
	// Negative: the pod's in-cluster address must not survive.
	if strings.Contains(strings.Join(p.Args, " "), "svc.cluster.local") {
		t.Errorf("cluster DNS address survived: %q", p.Args)
	}
}

func TestPlanTemplateChangeChangesHash(t *testing.T) {
	a := plan(t, dep(t, "kustomize-controller", "v1.9.5"), false)
	b := plan(t, dep(t, "kustomize-controller", "v1.9.5", "--feature-gates=StrictPostBuildSubstitutions=false"), false)
	c := plan(t, dep(t, "kustomize-controller", "v1.9.5"), false)
	if a.TemplateHash == b.TemplateHash {
		t.Fatal("an args change must change the template hash")
	}
	if a.TemplateHash != c.TemplateHash {
		t.Fatal("equal templates must hash equal")
	}
}

func TestPlanStrictGateForOldImages(t *testing.T) {
	fg := "--feature-gates=StrictPostBuildSubstitutions=false"
	old := plan(t, dep(t, "kustomize-controller", "v1.4.0"), false)
	if !slices.Contains(old.Args, fg) {
		t.Fatalf("v1.4.0 image: want %s injected, got %q", fg, old.Args)
	}
	if !strings.Contains(strings.Join(old.Notes, "\n"), "v1.4.0 but the sandbox runs the v1.9.5 binary") {
		t.Fatalf("version mismatch not noted: %q", old.Notes)
	}
	// The Deployment's own setting wins: nothing injected.
	set := plan(t, dep(t, "kustomize-controller", "v1.4.0", "--feature-gates=Foo=true,StrictPostBuildSubstitutions=true"), false)
	if slices.Contains(set.Args, fg) || EffectiveGates(set.Args)[StrictGate] != "true" {
		t.Fatalf("deployment gate overridden: %q", set.Args)
	}
	// v1.9.0 and later default to on: nothing injected.
	cur := plan(t, dep(t, "kustomize-controller", "v1.9.0"), false)
	if slices.Contains(cur.Args, fg) {
		t.Fatalf("v1.9.0 must not get the gate: %q", cur.Args)
	}
	// Only kustomize-controller has the gate.
	sc := plan(t, dep(t, "source-controller", "v1.4.0"), false)
	if slices.Contains(sc.Args, fg) {
		t.Fatalf("source-controller got kustomize's gate: %q", sc.Args)
	}
}

func TestPlanIgnoreArgsNegativeControl(t *testing.T) {
	p := plan(t, dep(t, "kustomize-controller", "v1.9.5", "--feature-gates=StrictPostBuildSubstitutions=false"), true)
	if slices.Contains(p.Args, "--log-level=info") || EffectiveGates(p.Args)[StrictGate] != "" {
		t.Fatalf("ignore-args still passed deployment args: %q", p.Args)
	}
}

func TestEffectiveGatesLaterWins(t *testing.T) {
	g := EffectiveGates([]string{"--feature-gates=A=true,B=true", "--other", "--feature-gates", "A=false"})
	if g["A"] != "false" || g["B"] != "true" {
		t.Fatalf("got %v", g)
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"NS": "flux-system"}
	for in, want := range map[string]string{
		"a.$(NS).b":    "a.flux-system.b",
		"$$(NS)":       "$(NS)",
		"$(MISSING)":   "$(MISSING)",
		"$(NS":         "$(NS",
		"cost $5":      "cost $5",
		"$(NS)$(NS)":   "flux-systemflux-system",
		"trailing $":   "trailing $",
		"${NS} stays":  "${NS} stays",
		"--x=$(NS)/ok": "--x=flux-system/ok",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlanRejectsWhatItCannotRun(t *testing.T) {
	d := dep(t, "kustomize-controller", "v1.9.5")
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env,
		corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}})
	if _, err := BuildPlan(d, PlanInput{Controller: d.Name}); err == nil || !strings.Contains(err.Error(), "env X") {
		t.Fatalf("secretKeyRef env: want an error naming env X, got %v", err)
	}
	d = dep(t, "kustomize-controller", "v1.9.5")
	d.Spec.Template.Spec.Containers[0].Command = []string{"/sh"}
	if _, err := BuildPlan(d, PlanInput{Controller: d.Name}); err == nil || !strings.Contains(err.Error(), "command") {
		t.Fatalf("command: want an error, got %v", err)
	}
}

func TestImageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/fluxcd/kustomize-controller:v1.4.0":                                                       "v1.4.0",
		"localhost:5000/kc:v1.9.5@sha256:0123456789012345678901234567890123456789012345678901234567890123": "v1.9.5",
		"localhost:5000/kc":               "",
		"fluxcd/source-controller:v1.9.5": "v1.9.5",
	} {
		if got := ImageVersion(in); got != want {
			t.Errorf("ImageVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoKindHint(t *testing.T) {
	line := `{"level":"error","msg":"unable to start manager","error":"failed to determine if *v1.OCIRepository is namespaced: failed to get restmapping: no matches for kind \"OCIRepository\" in version \"source.toolkit.fluxcd.io/v1\""}`
	m := noKindRe.FindStringSubmatch(line)
	if m == nil || m[1] != "OCIRepository" || m[2] != "source.toolkit.fluxcd.io/v1" {
		t.Fatalf("got %q", m)
	}
	if noKindRe.MatchString(`{"msg":"unable to start manager","error":"bind: address already in use"}`) {
		t.Fatal("matched an unrelated error")
	}
}
