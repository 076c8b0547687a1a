// Package reconcile is the one way this tool asks a Flux object to
// reconcile now: the reconcile.fluxcd.io/requestedAt annotation `flux
// reconcile` sets (meta.ReconcileRequestAnnotation), written with a merge
// patch under this tool's field manager, a request the API server could not
// take (it restarts, sheds load) retried for a while. The controller copies
// the token to status.lastHandledReconcileAt once it handled it, even when
// the object stays blocked.
package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
)

// DefaultBackoff spaces the retries of a request the API server could not
// take (kube.Transient: refused while it restarts, 503, 429, a timeout): 14
// tries over about 24 s, the gaps growing from 0.5 s to 4.5 s. A lost
// nudge is waited out at the controller's --requeue-dependency (30 s by
// default), after which retrying buys nothing. No Cap: a capped Backoff
// stops stepping when it reaches the cap.
func DefaultBackoff() utilwait.Backoff {
	return utilwait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.2, Jitter: 0.1, Steps: 14}
}

// Token is a new request's value (what `flux reconcile` writes).
func Token() string { return time.Now().Format(time.RFC3339Nano) }

// Request sets the annotation to token on obj (its kind, namespace and
// name are what count), retrying transient API errors by b within ctx. It
// returns the API server's last answer when the request was not taken.
func Request(ctx context.Context, c client.Client, obj client.Object, token string, b utilwait.Backoff) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	var last error
	err := utilwait.ExponentialBackoffWithContext(ctx, b, func(ctx context.Context) (bool, error) {
		last = c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(kube.FieldManager))
		if last == nil || !kube.Transient(last) {
			return last == nil, last
		}
		return false, nil
	})
	switch {
	case utilwait.Interrupted(err) && last != nil && ctx.Err() == nil:
		return last // the tries ran out: the API server's own answer says why
	case err != nil && last != nil && ctx.Err() != nil:
		return fmt.Errorf("%w (the API server's last answer: %v)", err, last)
	}
	return err
}
