package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/kstatus/watcher"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/pkg/gate"
)

// Apply server-side applies the objects in stages (CRDs and namespaces
// first, waiting for them, then the rest) and returns what happened to each.
// plan supplies the restart prediction for the outcome.
func Apply(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, plan []gate.ObjectChange, timeout time.Duration) ([]gate.ObjectChange, error) {
	opts := applyOptions()
	opts.WaitTimeout = timeout
	cs, err := cl.Manager.ApplyAllStaged(ctx, objs, opts)
	var out []gate.ObjectChange
	if cs != nil {
		for _, e := range cs.Entries {
			oc := gate.ObjectChange{Object: objectID(e.ObjMetadata.GroupKind.Kind, e.ObjMetadata.Namespace, e.ObjMetadata.Name), Action: string(e.Action)}
			if i := slices.IndexFunc(plan, func(p gate.ObjectChange) bool { return p.Object == oc.Object }); i >= 0 {
				oc.Restarts = plan[i].Restarts && e.Action == ssa.ConfiguredAction
				oc.TakenOverFrom = plan[i].TakenOverFrom
			}
			out = append(out, oc)
		}
	}
	if err != nil {
		return out, fmt.Errorf("server-side apply: %w", err)
	}
	return out, nil
}

// Progress receives one line per status change while waiting.
type Progress func(line string)

// WaitRollouts watches the objects until kstatus calls every one Current,
// reporting each status change. On timeout or failure the error carries
// the conditions and recent events of every object that is not Current.
func WaitRollouts(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, timeout time.Duration, progress Progress) error {
	ids := object.ObjMetadataSet{}
	for _, o := range objs {
		id, err := object.RuntimeToObjMeta(o)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := watcher.NewDefaultStatusWatcher(cl.Dynamic, cl.Client.RESTMapper())
	events := w.Watch(ctx, ids, watcher.Options{})
	last := map[object.ObjMetadata]*event.ResourceStatus{}
	done := func() bool {
		for _, id := range ids {
			if rs, ok := last[id]; !ok || rs.Status != status.CurrentStatus {
				return false
			}
		}
		return true
	}
	for ev := range events {
		switch ev.Type {
		case event.ErrorEvent:
			return fmt.Errorf("watch rollouts: %w", ev.Error)
		case event.ResourceUpdateEvent:
			rs := ev.Resource
			if prev, ok := last[rs.Identifier]; !ok || prev.Status != rs.Status || prev.Message != rs.Message {
				progress(fmt.Sprintf("%-11s %s: %s", rs.Status, objectID(rs.Identifier.GroupKind.Kind, rs.Identifier.Namespace, rs.Identifier.Name), rs.Message))
			}
			last[rs.Identifier] = rs
			if rs.Status == status.FailedStatus {
				return errors.New(describeStuck(ctx, cl, ids, last, "failed"))
			}
			if done() {
				return nil
			}
		}
	}
	// The channel closes when the context ends.
	return errors.New(describeStuck(context.Background(), cl, ids, last, fmt.Sprintf("not ready after %s (--timeout)", timeout)))
}

// describeStuck explains every object that is not Current: its kstatus
// message, its conditions and its recent events.
func describeStuck(ctx context.Context, cl *Cluster, ids object.ObjMetadataSet, last map[object.ObjMetadata]*event.ResourceStatus, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rollout %s:", why)
	for _, id := range ids {
		rs, ok := last[id]
		if ok && rs.Status == status.CurrentStatus {
			continue
		}
		name := objectID(id.GroupKind.Kind, id.Namespace, id.Name)
		if !ok {
			fmt.Fprintf(&b, "\n  %s: no status seen", name)
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %s: %s", name, rs.Status, rs.Message)
		if rs.Resource != nil {
			conds, _, _ := unstructured.NestedSlice(rs.Resource.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok {
					fmt.Fprintf(&b, "\n    condition %v=%v %v: %v", m["type"], m["status"], m["reason"], m["message"])
				}
			}
		}
		var evs corev1.EventList
		sel := fields.OneTermEqualSelector("involvedObject.name", id.Name)
		if err := cl.Client.List(ctx, &evs, client.InNamespace(id.Namespace), client.MatchingFieldsSelector{Selector: sel}); err == nil {
			items := evs.Items
			if len(items) > 5 {
				items = items[len(items)-5:]
			}
			for _, e := range items {
				fmt.Fprintf(&b, "\n    event %s %s: %s", e.Type, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}
