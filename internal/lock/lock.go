// Package lock is the cluster lock every writing command takes: a
// coordination.k8s.io/v1 Lease in the Flux namespace, held with client-go's
// LeaseLock (optimistic concurrency on the Lease's resourceVersion, so two
// runs on two machines see each other), renewed while the run lasts,
// released at the end. A lease whose holder stopped renewing is taken over
// once its duration has passed; Break takes it over at once.
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Name is the Lease's name.
const Name = "bootstrap-lock"

// Holder says who holds the lock; it is the Lease's holderIdentity (JSON).
type Holder struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

func (h Holder) String() string {
	return fmt.Sprintf("%s on %s (pid %d) since %s", h.Command, h.Host, h.PID, h.Since.UTC().Format(time.RFC3339))
}

// Options of Acquire.
type Options struct {
	Namespace string
	// Command names the run in the holder record, e.g. "bootstrap up".
	Command string
	// Duration is how long the lease holds without a renewal (default 30s).
	Duration time.Duration
	// Break takes over a lease held by another run at once.
	Break bool
	// CreateNamespace creates a missing Flux namespace for the lease (the
	// commands that install Flux); otherwise a missing namespace means Flux
	// is not installed, and nothing is created.
	CreateNamespace bool
	// Now is the clock (tests set it).
	Now func() time.Time
}

// HeldError is a refusal: another run holds the lock.
type HeldError struct {
	Lease  string
	Holder string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("another bootstrap run holds the cluster lock (Lease %s): %s; wait for it to finish, or, if it died, re-run after the lease expires or with --break-lock", e.Lease, e.Holder)
}

// Lock is a held lock.
type Lock struct {
	ll   *resourcelock.LeaseLock
	rec  resourcelock.LeaderElectionRecord
	stop context.CancelFunc
	done chan struct{}
	now  func() time.Time
	dur  time.Duration
	// TookOver names a stale or broken holder this run replaced ("" when none).
	TookOver string
}

// Acquire takes the lock or returns a *HeldError naming the holder. The
// Flux namespace is created when missing, so a fresh cluster can be locked.
func Acquire(ctx context.Context, cs kubernetes.Interface, o Options) (*Lock, error) {
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := ensureNamespace(ctx, cs, o.Namespace, o.CreateNamespace); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	now := o.Now()
	id, err := json.Marshal(Holder{Host: host, PID: os.Getpid(), Command: o.Command, Since: now})
	if err != nil {
		return nil, err
	}
	ll := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: Name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: string(id)},
	}
	rec := resourcelock.LeaderElectionRecord{
		HolderIdentity:       string(id),
		LeaseDurationSeconds: int(o.Duration / time.Second),
		AcquireTime:          metav1.NewTime(now),
		RenewTime:            metav1.NewTime(now),
	}
	l := &Lock{ll: ll, rec: rec, now: o.Now, dur: o.Duration}
	ref := o.Namespace + "/" + Name
	old, _, err := ll.Get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		if err := ll.Create(ctx, rec); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, &HeldError{Lease: ref, Holder: "another run that took it a moment ago"}
			}
			return nil, fmt.Errorf("take the cluster lock %s: %w", ref, err)
		}
	case err != nil:
		return nil, fmt.Errorf("read the cluster lock %s: %w", ref, err)
	default:
		held := old.HolderIdentity != ""
		expires := old.RenewTime.Add(time.Duration(old.LeaseDurationSeconds) * time.Second)
		who := describe(old.HolderIdentity)
		gone := held && holderGone(old.HolderIdentity, host)
		switch {
		case held && now.Before(expires) && gone:
			l.TookOver = "took over the lock of " + who + ": that process is gone from this host (killed?)"
		case held && now.Before(expires) && !o.Break:
			return nil, &HeldError{Lease: ref, Holder: who}
		case held && now.Before(expires):
			l.TookOver = "broke the lock of " + who + " (--break-lock)"
		case held:
			l.TookOver = fmt.Sprintf("took over the lock of %s: it stopped renewing at %s", who, old.RenewTime.UTC().Format(time.RFC3339))
		}
		if err := ll.Update(ctx, rec); err != nil {
			if apierrors.IsConflict(err) {
				return nil, &HeldError{Lease: ref, Holder: "another run that took it a moment ago"}
			}
			return nil, fmt.Errorf("take the cluster lock %s: %w", ref, err)
		}
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.stop, l.done = stop, make(chan struct{})
	go l.renew(rctx)
	return l, nil
}

// renew keeps the lease fresh until Release.
func (l *Lock) renew(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.dur / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.rec.RenewTime = metav1.NewTime(l.now())
			_ = l.ll.Update(ctx, l.rec) // a missed renewal is retried at the next tick
		}
	}
}

// Release stops renewing and frees the lease for the next run. It runs on
// its own short deadline, so an interrupted run still releases.
func (l *Lock) Release() error {
	l.stop()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur, _, err := l.ll.Get(ctx)
	if err != nil {
		return err
	}
	if cur.HolderIdentity != l.rec.HolderIdentity {
		return nil // broken and taken by another run: not ours to free
	}
	rec := l.rec
	rec.HolderIdentity = ""
	rec.RenewTime = metav1.NewTime(l.now())
	return l.ll.Update(ctx, rec)
}

// holderGone says whether the holder ran on this host and its process no
// longer exists: a run killed with SIGKILL could not release, and its
// re-run on the same machine need not wait for the lease to expire.
func holderGone(identity, host string) bool {
	var h Holder
	if err := json.Unmarshal([]byte(identity), &h); err != nil || h.Host != host || h.PID <= 0 || h.PID == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(h.PID, 0), syscall.ESRCH)
}

func describe(identity string) string {
	var h Holder
	if err := json.Unmarshal([]byte(identity), &h); err != nil || h.Command == "" {
		return fmt.Sprintf("%q", identity)
	}
	return h.String()
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string, create bool) error {
	_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && !create {
		return fmt.Errorf("namespace %s does not exist: Flux is not installed in this cluster: run `bootstrap controllers` (or `bootstrap up`) first", ns)
	}
	if apierrors.IsNotFound(err) {
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{FieldManager: "bootstrap"})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("namespace %s for the cluster lock: %w", ns, err)
	}
	return nil
}
