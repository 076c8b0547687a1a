// Package apply is the machinery every phase that writes to the cluster
// shares: connect, read a render, plan (a server-side dry run per object),
// staged server-side apply, prune of an earlier install's leftovers, and CRD
// storage-version migration. Field manager "bootstrap".
package apply

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Cluster is what the phase talks to.
type Cluster struct {
	Client    client.WithWatch
	Clientset kubernetes.Interface
	Dynamic   dynamic.Interface
	Manager   *ssa.ResourceManager
	// Host is the API server address, for evidence.
	Host string
	// Config is the REST config the clients were built from, for
	// libraries that build their own (controller-runtime's cache); nil
	// for fakes.
	Config *rest.Config
}

// Reachable is the one reachability check every phase that talks to the
// cluster starts with (gate cluster.reachable of its phase): the API
// server's version, or a failure naming the address and what to check.
func (c *Cluster) Reachable(d verify.Def) (verify.Check, string) {
	info, err := c.Clientset.Discovery().ServerVersion()
	if err != nil {
		return d.Fail(fmt.Sprintf("cannot reach the API server at %s: %v; check --kubeconfig/--context and the network", c.Host, err)), ""
	}
	return d.Pass(fmt.Sprintf("%s answers, Kubernetes %s", c.Host, info.GitVersion)), info.GitVersion
}

// Clients are the clients the wait package reads with.
func (c *Cluster) Clients() wait.Clients {
	return wait.Clients{Client: c.Client, Dynamic: c.Dynamic}
}

// Connect builds the clients for a REST config.
func Connect(cfg *rest.Config) (*Cluster, error) {
	c, err := kube.Client(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Client: c, Clientset: cs, Dynamic: dyn, Manager: kube.ResourceManager(c), Host: cfg.Host, Config: cfg}, nil
}

// ReadObjects parses a multi-document render.
func ReadObjects(yaml []byte) ([]*unstructured.Unstructured, error) {
	objs, err := ssautils.ReadObjects(bytes.NewReader(yaml))
	if err != nil {
		return nil, fmt.Errorf("parse render: %w", err)
	}
	return objs, nil
}

// ID is an object's kind/namespace/name.
func ID(o *unstructured.Unstructured) string {
	return objectID(o.GetKind(), o.GetNamespace(), o.GetName())
}

// objectID is kind/namespace/name, or kind/name for a cluster-scoped object.
func objectID(kind, ns, name string) string {
	if ns == "" {
		return kind + "/" + name
	}
	return kind + "/" + ns + "/" + name
}

// Object server-side applies one object with this tool's apply options
// and field manager: the one apply path for the single writes (the age-key
// Secret, cutover's GitRepository, the probe). The staged apply of a render
// is Apply.
func Object(ctx context.Context, rm *ssa.ResourceManager, obj *unstructured.Unstructured) (*ssa.ChangeSetEntry, error) {
	return rm.Apply(ctx, obj, applyOptions())
}

// foreignManagers are the field managers of earlier imperative installs that
// an apply by this tool takes over: kubectl (client- and server-side) and
// `flux install`.
var foreignManagers = []string{"kubectl", "kubectl-client-side-apply", "kubectl-edit", "before-first-apply", "flux"}

// applyOptions take over objects from earlier installs cleanly: their field
// managers and kubectl's last-applied annotation are removed.
func applyOptions() ssa.ApplyOptions {
	o := ssa.DefaultApplyOptions()
	for _, m := range foreignManagers {
		o.Cleanup.FieldManagers = append(o.Cleanup.FieldManagers,
			ssa.FieldManager{Name: m, OperationType: metav1.ManagedFieldsOperationApply},
			ssa.FieldManager{Name: m, OperationType: metav1.ManagedFieldsOperationUpdate})
	}
	o.Cleanup.Annotations = []string{"kubectl.kubernetes.io/last-applied-configuration"}
	return o
}

// otherManagers lists the field managers of a live object that are not
// this tool, and not the control plane's own status writers.
func otherManagers(live *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == kube.FieldManager || mf.Subresource == "status" || slices.Contains(out, mf.Manager) {
			continue
		}
		if !slices.Contains(foreignManagers, mf.Manager) {
			// e.g. kube-controller-manager setting replicas defaults; not an owner to report.
			continue
		}
		out = append(out, mf.Manager)
	}
	return out
}
