package controllers

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Unit tests of the gate logic against fake clients; the end-to-end suite
// proves the same gates against a real API server.

func fakeCluster(t *testing.T, gitVersion string, denied map[string]bool, objs ...client.Object) *apply.Cluster {
	t.Helper()
	s, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).Build()
	cs := kfake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: gitVersion}
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		// As RBAC: "*" on "*" is allowed only when nothing is denied.
		r.Status.Allowed = !denied[ra.Verb+" "+ra.Resource] && (ra.Verb != "*" || len(denied) == 0)
		return true, r, nil
	})
	return &apply.Cluster{Client: c, Clientset: cs, Host: "https://fake"}
}

func deploymentObj(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "flux-system"},
	}}
}

func verdictOf(cs []verify.Check, id string) verify.Check {
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	return verify.Check{Verdict: "missing"}
}

func TestBeforeGates(t *testing.T) {
	objs := []*unstructured.Unstructured{deploymentObj("kustomize-controller")}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	owned := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "kustomize-controller", Namespace: "flux-system",
		Labels: map[string]string{"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}}
	tests := []struct {
		name    string
		version string
		denied  map[string]bool
		objs    []client.Object
		force   bool
		id      string
		verdict verify.Verdict
		message string
	}{
		{"version ok", "v1.36.3", nil, nil, false, GateVersion.ID, verify.Pass, "≥ v1.33.0"},
		{"version too old", "v1.31.2", nil, nil, false, GateVersion.ID, verify.Fail, "older than v1.33.0"},
		{"permissions ok", "v1.36.3", nil, nil, false, GatePermissions.ID, verify.Pass, "every permission"},
		{"permission missing", "v1.36.3", map[string]bool{"create deployments": true}, nil, false, GatePermissions.ID, verify.Fail, "lacks 1 permission"},
		{"namespace absent", "v1.36.3", nil, nil, false, GateNamespace.ID, verify.Pass, "will be created"},
		{"namespace terminating", "v1.36.3", nil, []client.Object{terminating}, false, GateNamespace.ID, verify.Fail, "is Terminating"},
		{"not owned", "v1.36.3", nil, nil, false, GateOwnership.ID, verify.Pass, "no Flux Kustomization"},
		{"owned by a Kustomization", "v1.36.3", nil, []client.Object{active, owned}, false, GateOwnership.ID, verify.Fail, "or pass --force"},
		{"owned, --force", "v1.36.3", nil, []client.Object{active, owned}, true, GateOwnership.ID, verify.Warn, "--force"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := fakeCluster(t, tt.version, tt.denied, tt.objs...)
			checks, _, _ := Before(context.Background(), cl, objs, BeforeOptions{Namespace: "flux-system", MinKubernetes: "v1.33.0", FluxVersion: "v2.9.5", Force: tt.force})
			c := verdictOf(checks, tt.id)
			if c.Verdict != tt.verdict || !strings.Contains(c.Message, tt.message) {
				t.Fatalf("%s: %s %q, want %s containing %q (evidence %v)", tt.id, c.Verdict, c.Message, tt.verdict, tt.message, c.Evidence)
			}
			if tt.name == "permission missing" && !strings.Contains(strings.Join(c.Evidence, "\n"), "create deployments.apps in namespace flux-system") {
				t.Errorf("the missing permission is not listed: %v", c.Evidence)
			}
			if tt.name == "permissions ok" && !strings.Contains(strings.Join(c.Evidence, "\n"), "one SelfSubjectAccessReview: verb * on resource *") {
				t.Errorf("a cluster-admin identity is not proven with one review: %v", c.Evidence)
			}
		})
	}
}

func TestStoredVersionsCheck(t *testing.T) {
	d := []apply.Dropped{{CRD: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "ocirepositories.source.toolkit.fluxcd.io"}}}, Versions: []string{"v1beta2"}, Storage: "v1"}}
	if c := StoredVersionsCheck(nil, false); c.Verdict != verify.Pass {
		t.Errorf("nothing dropped: %s", c.Verdict)
	}
	if c := StoredVersionsCheck(d, false); c.Verdict != verify.Fail || !strings.Contains(c.Message, "--migrate-crds") || !strings.Contains(c.Evidence[0], "stores v1beta2") {
		t.Errorf("dropped without --migrate-crds: %s %q %v", c.Verdict, c.Message, c.Evidence)
	}
	if c := StoredVersionsCheck(d, true); c.Verdict != verify.Pass {
		t.Errorf("dropped with --migrate-crds: %s", c.Verdict)
	}
}

func liveDeployment(args []string, revision string, available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kustomize-controller", Namespace: "flux-system", UID: "d1", Generation: 2,
			Annotations: map[string]string{revisionAnnotation: revision}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kustomize-controller"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/fluxcd/kustomize-controller:v1.9.5", Args: args}}}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, AvailableReplicas: available},
	}
}

func replicaSet(name, revision, hash string, owner *appsv1.Deployment, available int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "flux-system", Annotations: map[string]string{revisionAnnotation: revision},
			Labels:          map[string]string{"app": "kustomize-controller", appsv1.DefaultDeploymentUniqueLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Status: appsv1.ReplicaSetStatus{AvailableReplicas: available},
	}
}

func pod(name, hash string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "flux-system",
		Labels: map[string]string{"app": "kustomize-controller", appsv1.DefaultDeploymentUniqueLabelKey: hash}}}
}

func TestAfterGates(t *testing.T) {
	strict := []string{"--log-level=info", "--feature-gates=StrictPostBuildSubstitutions=true"}
	rendered := *liveDeployment(strict, "", 0)
	tests := []struct {
		name        string
		live        *appsv1.Deployment
		extra       func(d *appsv1.Deployment) []client.Object
		flags, roll verify.Verdict
		message     string
	}{
		{"landed and rolled out", liveDeployment(strict, "2", 1), func(d *appsv1.Deployment) []client.Object {
			return []client.Object{replicaSet("rs-old", "1", "old", d, 0), replicaSet("rs-new", "2", "new", d, 1), pod("p-new", "new")}
		}, verify.Pass, verify.Pass, ""},
		{"live args differ", liveDeployment([]string{"--log-level=info", "--feature-gates=StrictPostBuildSubstitutions=false"}, "2", 1), func(d *appsv1.Deployment) []client.Object {
			return []client.Object{replicaSet("rs-new", "2", "new", d, 1), pod("p-new", "new")}
		}, verify.Fail, verify.Pass, "live args"},
		{"old pod remains", liveDeployment(strict, "2", 1), func(d *appsv1.Deployment) []client.Object {
			return []client.Object{replicaSet("rs-new", "2", "new", d, 1), pod("p-new", "new"), pod("p-old", "old")}
		}, verify.Pass, verify.Fail, "pods of an older template remain: [p-old]"},
		{"new ReplicaSet not available", liveDeployment(strict, "2", 0), func(d *appsv1.Deployment) []client.Object {
			return []client.Object{replicaSet("rs-new", "2", "new", d, 0)}
		}, verify.Pass, verify.Fail, "0/1 available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]client.Object{tt.live}, tt.extra(tt.live)...)
			cl := fakeCluster(t, "v1.36.3", nil, objs...)
			checks := After(context.Background(), cl, []appsv1.Deployment{rendered})
			f, r := verdictOf(checks, GateFlagsLive.ID), verdictOf(checks, GateRollout.ID)
			if f.Verdict != tt.flags || r.Verdict != tt.roll {
				t.Fatalf("flags-live %s (%v), rollout %s (%v); want %s, %s", f.Verdict, f.Evidence, r.Verdict, r.Evidence, tt.flags, tt.roll)
			}
			if tt.message != "" && !strings.Contains(strings.Join(append(f.Evidence, r.Evidence...), "\n"), tt.message) {
				t.Errorf("evidence lacks %q: %v %v", tt.message, f.Evidence, r.Evidence)
			}
		})
	}
}

// TestManagerLabels: the keys the e2e suite removes to hand Flux back are
// exactly the ones the ownership gate reads, name and namespace of each
// manager (kustomize-controller labels what a Kustomization applies with
// kustomize.toolkit.fluxcd.io/{name,namespace}; the Flux operator with
// fluxcd.controlplane.io/{name,namespace}).
func TestManagerLabels(t *testing.T) {
	want := "kustomize.toolkit.fluxcd.io/name kustomize.toolkit.fluxcd.io/namespace fluxcd.controlplane.io/name fluxcd.controlplane.io/namespace"
	if got := strings.Join(ManagerLabels(), " "); got != want {
		t.Fatalf("ManagerLabels() = %q, want %q", got, want)
	}
}
