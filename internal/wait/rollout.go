package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/aggregator"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/collector"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/statusreaders"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/kstatus/watcher"
	"github.com/fluxcd/cli-utils/pkg/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rollouts watches the objects until kstatus calls every one Current,
// reporting each status change. On timeout or failure the error carries
// the conditions and recent events of every object that is not Current.
func Rollouts(ctx context.Context, cl Clients, objs []*unstructured.Unstructured, timeout time.Duration, progress Progress) error {
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
	// kstatus computes a Deployment's status from the Deployment alone; the
	// default reader also lists its ReplicaSets and Pods on every event
	// (two requests each) for details this wait never reads.
	w.StatusReader = statusreaders.NewGenericStatusReader(cl.Client.RESTMapper(), status.Compute)
	coll := collector.NewResourceStatusCollector(ids)
	seen := map[object.ObjMetadata]status.Status{}
	var failed bool
	done := coll.ListenWithObserver(w.Watch(ctx, ids, watcher.Options{}), collector.ObserverFunc(
		func(c *collector.ResourceStatusCollector, ev event.Event) {
			if ev.Type != event.ResourceUpdateEvent {
				return
			}
			rs := ev.Resource
			if prev, ok := seen[rs.Identifier]; !ok || prev != rs.Status {
				progress(fmt.Sprintf("%-11s %s: %s", rs.Status, objectID(rs.Identifier.GroupKind.Kind, rs.Identifier.Namespace, rs.Identifier.Name), rs.Message))
			}
			seen[rs.Identifier] = rs.Status
			var all []*event.ResourceStatus
			for _, r := range c.ResourceStatuses {
				all = append(all, r)
			}
			if rs.Status == status.FailedStatus {
				failed = true
				cancel()
			} else if aggregator.AggregateStatus(all, status.CurrentStatus) == status.CurrentStatus {
				cancel()
			}
		}))
	<-done // closes when the watch ends: all Current, one Failed, or the context ended
	obs := coll.LatestObservation()
	last := map[object.ObjMetadata]*event.ResourceStatus{}
	for _, rs := range obs.ResourceStatuses {
		last[rs.Identifier] = rs
	}
	switch {
	case obs.Error != nil && !errors.Is(obs.Error, context.Canceled) && !errors.Is(obs.Error, context.DeadlineExceeded):
		return fmt.Errorf("watch rollouts: %w", obs.Error)
	case failed:
		return errors.New(describeStuck(context.WithoutCancel(ctx), cl, ids, last, "failed"))
	case aggregator.AggregateStatus(obs.ResourceStatuses, status.CurrentStatus) == status.CurrentStatus:
		return nil
	}
	return errors.New(describeStuck(context.WithoutCancel(ctx), cl, ids, last, fmt.Sprintf("not ready after %s (--timeout)", timeout)))
}

// describeStuck explains every object that is not Current: its kstatus
// message, its conditions and its recent events.
func describeStuck(ctx context.Context, cl Clients, ids object.ObjMetadataSet, last map[object.ObjMetadata]*event.ResourceStatus, why string) string {
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
