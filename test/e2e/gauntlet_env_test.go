//go:build e2e

package e2e

// The gauntlet's own sandboxes: each stage that needs a fresh cluster gets
// one (free ports, its own runner), torn down when the gauntlet ends.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gEnv is one fresh sandbox of the gauntlet.
type gEnv struct {
	*env
	// firstReady is when the last waitKustomizations first saw each
	// Kustomization Ready at the revision (polled every 500 ms).
	firstReady map[string]time.Time
}

// startGEnv starts a sandbox; withRunner also starts a controller runner.
func startGEnv(ctx context.Context, name, work string, withRunner bool) (*gEnv, error) {
	e, err := startEnv(ctx, suite.envConfig, name, work, envOptions{runner: withRunner})
	if err != nil {
		return nil, err
	}
	return &gEnv{env: e}, nil
}

func (g *gEnv) stop() {
	if g != nil {
		g.teardown()
	}
}

// cliRun is one bootstrap invocation and what it printed.
type cliRun struct {
	args           []string
	code           int
	stdout, stderr string
	report         cliReport
	facts          map[string]string
	phases         []phaseSummary
	wall           time.Duration
}

// phaseSummary is one phase of a report.
type phaseSummary struct{ Name, Verdict, Duration string }

// firstProblem is the gate's own message: the report's error, else the
// first failing (then warning-free skip) check as "id: message".
func (r cliRun) firstProblem() string {
	if r.report.Error != "" {
		return r.report.Error
	}
	for _, v := range []string{"fail", "skip"} {
		for _, c := range r.report.Checks {
			if c.Verdict == v {
				return c.ID + ": " + c.Message
			}
		}
	}
	return fmt.Sprintf("exit %d, no failing check", r.code)
}

func (r cliRun) requests() string {
	if v, ok := r.facts["apiRequests"]; ok {
		return v
	}
	return "?"
}

// changedObjects lists the objects the run created, updated or would.
func (r cliRun) changedObjects() (changed, restarts []string) {
	for _, o := range r.report.Objects {
		if o.Action != "unchanged" && o.Action != "" {
			changed = append(changed, o.Action+" "+o.Object)
		}
		if o.Restarts {
			restarts = append(restarts, o.Object)
		}
	}
	return changed, restarts
}

// waitKustomizations waits until every named Kustomization is Ready at rev,
// nudging (reconcile.fluxcd.io/requestedAt) the source and the ones not yet
// there every second instead of waiting out the 30 s dependency requeue.
func (g *gEnv) waitKustomizations(ctx context.Context, names []string, rev string) (map[string]kustomizev1.Kustomization, error) {
	lastNudge, lastWaiting := time.Time{}, ""
	if g.firstReady == nil {
		g.firstReady = map[string]time.Time{}
	}
	for k := range g.firstReady {
		delete(g.firstReady, k)
	}
	for {
		var list kustomizev1.KustomizationList
		if err := g.client.List(ctx, &list, client.InNamespace(fluxNS)); err != nil {
			return nil, err
		}
		got := map[string]kustomizev1.Kustomization{}
		var waiting []string
		for _, k := range list.Items {
			got[k.Name] = k
		}
		for _, n := range names {
			k, ok := got[n]
			if !ok {
				waiting = append(waiting, n+": not found")
				continue
			}
			st, reason, msg, cur := readyStatus(k.Generation, k.Status.Conditions)
			if st != metav1.ConditionTrue || !cur || k.Status.LastAppliedRevision != rev {
				waiting = append(waiting, fmt.Sprintf("%s: Ready=%s %s %q applied=%s", n, st, reason, msg, k.Status.LastAppliedRevision))
			} else if _, seen := g.firstReady[n]; !seen {
				g.firstReady[n] = time.Now()
			}
		}
		if len(waiting) == 0 {
			return got, nil
		}
		if w := strings.Join(waiting, "; "); w != lastWaiting {
			lastWaiting = w
			g.logger.Info("gauntlet: waiting for Kustomizations", "sandbox", g.name, "revision", rev, "waiting", w)
		}
		if time.Since(lastNudge) > time.Second {
			lastNudge = time.Now()
			g.nudgeSource(ctx, rev)
			for _, w := range waiting {
				g.nudge(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: strings.SplitN(w, ":", 2)[0]}})
			}
		}
		select {
		case <-ctx.Done():
			return got, fmt.Errorf("not every Kustomization Ready at %s: %s", rev, strings.Join(waiting, "; "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// nudgeNotReady asks every Kustomization of the namespace that is not
// Ready at its generation to reconcile, once a second, until ctx ends.
func (g *gEnv) nudgeNotReady(ctx context.Context) {
	for ctx.Err() == nil {
		var list kustomizev1.KustomizationList
		if g.client.List(ctx, &list, client.InNamespace(fluxNS)) == nil {
			for i := range list.Items {
				k := &list.Items[i]
				if st, _, _, cur := readyStatus(k.Generation, k.Status.Conditions); st != metav1.ConditionTrue || !cur {
					g.nudge(ctx, k)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (g *gEnv) nudge(ctx context.Context, obj client.Object) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	_ = g.client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// nudgeSource asks the GitRepository to fetch when its artifact is not rev.
func (g *gEnv) nudgeSource(ctx context.Context, rev string) {
	var gr sourcev1.GitRepository
	if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
		return
	}
	if gr.Status.Artifact == nil || gr.Status.Artifact.Revision != rev {
		g.nudge(ctx, &gr)
	}
}

// kubectl runs the sandbox's kubectl (built from the same Kubernetes tag)
// against g.
func (g *gEnv) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(g.binDir, "kubectl"), append([]string{"--kubeconfig", g.sb.KubeconfigPath}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), fmt.Errorf("kubectl %s: exit %d: %s", strings.Join(args, " "), ee.ExitCode(), strings.TrimSpace(string(out)))
		}
		return string(out), err
	}
	return string(out), nil
}

func hasArg(args []string, a string) bool { return slices.Contains(args, a) }
