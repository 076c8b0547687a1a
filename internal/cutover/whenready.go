package cutover

import (
	"context"
	"fmt"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Gates of --cutover-when-ready, besides cutover's own.
var (
	GateFinalReachable = verify.Def{ID: "cutover.final-reachable", Phase: PhaseName, Stage: verify.Before, Title: "source-controller reaches the final source from inside the cluster, at the temporary source's revision"}
	GateServeStopped   = verify.Def{ID: "cutover.serve-stopped", Phase: PhaseName, Stage: verify.After, Title: "the source this machine served stopped once nothing read it"}
)

// ProbeSuffix names the probe GitRepository: <source>-final-probe.
const ProbeSuffix = "-final-probe"

// WhenReadyOptions drive a cutover that waits for the final source.
type WhenReadyOptions struct {
	// Namespace and Name are the root's source; Kind is its kind ("":
	// GitRepository; OCIRepository: oci.go).
	Namespace, Name, Kind string
	// Wait bounds the wait for the final source (--cutover-timeout).
	Wait time.Duration
	// Timeout is cutover's own (each of its waits).
	Timeout time.Duration
	// ServeDir is this machine's serving state for the cluster ("" when
	// none): the serving process must end once the cutover is done.
	ServeDir string
}

// NewWhenReadyPhase is --cutover-when-ready: a probe GitRepository for the
// URL git declares (with its secretRef) shows when source-controller, from
// inside the cluster and through its DNS, has the final source Ready at the
// revision the temporary source serves; then cutover runs (its gates and
// rollback), the probe is deleted and the serving process ends.
func NewWhenReadyPhase(o WhenReadyOptions, connect func() (*apply.Cluster, error)) *WhenReadyPhase {
	return &WhenReadyPhase{o: o, connect: connect}
}

// WhenReadyPhase is the cutover phase of `up --cutover-when-ready`.
type WhenReadyPhase struct {
	pipeline.Base // After: Do proves the outcome
	o             WhenReadyOptions
	connect       func() (*apply.Cluster, error)
	cl            *apply.Cluster
}

// Name implements pipeline.Phase.
func (p *WhenReadyPhase) Name() string { return PhaseName }

// Gates implements pipeline.Phase.
func (p *WhenReadyPhase) Gates() []verify.Def {
	return append([]verify.Def{GateFinalReachable}, append((&Phase{}).Gates(), GateServeStopped)...)
}

// Before connects.
func (p *WhenReadyPhase) Before(context.Context, *pipeline.Run) ([]verify.Check, error) {
	var err error
	p.cl, err = p.connect()
	return nil, err
}

// Do probes the final source, then cuts over.
func (p *WhenReadyPhase) Do(ctx context.Context, run *pipeline.Run) error {
	o, report := p.o, run.Report
	if o.Kind == sourcev1.OCIRepositoryKind {
		return p.doOCI(ctx, run)
	}
	id := fmt.Sprintf("GitRepository %s/%s", o.Namespace, o.Name)
	live, err := rootsync.LiveSource(ctx, p.cl.Client, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	rc := GateFinalReachable.New()
	if live == nil {
		rc.Verdict, rc.Message = verify.Fail, id+" not found: nothing to cut over"
		report.Add(rc)
		return nil
	}
	tmp, declared := rootsync.TemporaryOf(live)
	if tmp == nil {
		url, _, _ := unstructured.NestedString(live.Object, "spec", "url")
		rc.Verdict, rc.Message = verify.Pass, fmt.Sprintf("%s is not on a temporary source (it reads %s): nothing to cut over", id, url)
		report.Add(rc)
		return nil
	}
	want, _, _ := unstructured.NestedString(live.Object, "status", "artifact", "revision")
	if run.DryRun {
		rc.Verdict, rc.Message = verify.Skip, fmt.Sprintf("dry run: would wait for %s to be Ready at %s from inside the cluster, then cut over", declared.URL, want)
		report.Add(rc)
		return nil
	}
	run.Report.Changed = true
	probe := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"url": declared.URL, "interval": "30s", "timeout": "20s",
	}}}
	probe.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind))
	probe.SetNamespace(o.Namespace)
	probe.SetName(o.Name + ProbeSuffix)
	probe.SetLabels(map[string]string{serve.SecretLabel: "probe"})
	if declared.Ref != nil {
		// The declared ref whole: the probe's revision is then the one the
		// root's source reports once cut over (fluxcd/pkg/git Commit.String).
		_ = unstructured.SetNestedMap(probe.Object, serve.RefMap(declared.Ref), "spec", "ref")
	}
	if declared.Secret != "" {
		_ = unstructured.SetNestedField(probe.Object, declared.Secret, "spec", "secretRef", "name")
	}
	if _, err := apply.Object(ctx, p.cl.Manager, probe); err != nil {
		return fmt.Errorf("create the probe GitRepository %s/%s: %w", o.Namespace, probe.GetName(), err)
	}
	defer func() {
		// The probe goes whatever happened, also on an interrupt.
		dctx, cancel := context.WithTimeout(kube.Detach(ctx), 30*time.Second)
		defer cancel()
		err := p.cl.Client.Delete(dctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: probe.GetName()}})
		if err == nil || apierrors.IsNotFound(err) {
			// Gone, source-controller's finalizer done: nothing left behind.
			err = wait.Gone[*sourcev1.GitRepository](dctx, p.cl.Client, &sourcev1.GitRepositoryList{}, o.Namespace, probe.GetName())
		}
		if err != nil {
			report.Warn(fmt.Sprintf("delete the probe GitRepository %s/%s: %v (delete it by hand)", o.Namespace, probe.GetName(), err))
		}
	}()
	run.Progressf("waiting for the final source %s to be Ready at %s from inside the cluster (probe %s, timeout %s)", declared.URL, want, probe.GetName(), o.Wait)
	wctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	last := ""
	g, err := wait.For(wctx, p.cl.Client, &sourcev1.GitRepositoryList{}, o.Namespace, probe.GetName(), func(g *sourcev1.GitRepository) (bool, string) {
		ok, desc := fluxobj.Ready(g)
		rev := ""
		if g.Status.Artifact != nil {
			rev = g.Status.Artifact.Revision
		}
		if ok && rev != want {
			desc += fmt.Sprintf("; at %s, not the temporary source's %s: push the served commit to the final source", rev, want)
		}
		if desc != last {
			last = desc
			run.Progressf("final source %s: %s", declared.URL, desc)
		}
		return ok && rev == want, desc
	})
	if err != nil {
		rc.Verdict = verify.Fail
		rc.Message = fmt.Sprintf("the final source %s is not Ready at %s from inside the cluster within --cutover-timeout %s: %v; the cluster stays on the temporary source %s (still served); fix what the message names (DNS, credentials in Secret %q, the commit pushed), then run `bootstrap cutover`",
			declared.URL, want, o.Wait, err, tmp.URL, declared.Secret)
		report.Add(rc)
		return nil
	}
	rc.Verdict = verify.Pass
	rc.Message = fmt.Sprintf("the probe %s/%s reads %s Ready at %s from inside the cluster", g.Namespace, g.Name, declared.URL, g.Status.Artifact.Revision)
	report.Add(rc)
	if err := Run(ctx, p.cl, Options{Namespace: o.Namespace, Name: o.Name, Timeout: o.Timeout, Progress: run.Progress}, report); err != nil {
		return err
	}
	if o.ServeDir != "" && handedBack(report) {
		report.Add(serveStopped(o.ServeDir, run, 30*time.Second, 5*time.Second))
	}
	return nil
}

// serveStopped proves the serving process ended by itself within selfStop
// once the GitRepository read the final source (it watches it), stopping
// it if not (SIGTERM, then SIGKILL, grace each).
func serveStopped(dir string, run *pipeline.Run, selfStop, grace time.Duration) verify.Check {
	c := GateServeStopped.New()
	st, _ := serve.ReadState(dir)
	if running, _ := serve.Running(dir); !running {
		c.Verdict, c.Message = verify.Pass, "no serving process left"
		return c
	}
	run.Progressf("waiting for the serving process (pid %d) to see the cutover and stop", st.PID)
	if serve.WaitStopped(dir, selfStop) {
		c.Verdict, c.Message = verify.Pass, fmt.Sprintf("the serving process (pid %d) saw its source read the final source and stopped by itself", st.PID)
		return c
	}
	if _, err := serve.Stop(dir, grace); err != nil {
		c.Verdict, c.Message = verify.Fail, fmt.Sprintf("the serving process (pid %d) did not stop: %v", st.PID, err)
		return c
	}
	c.Verdict, c.Message = verify.Warn, fmt.Sprintf("the serving process (pid %d) did not stop by itself within %s (its log: %s): stopped", st.PID, selfStop, st.Log)
	return c
}

func handedBack(r *verify.Report) bool {
	for _, c := range r.Checks {
		if c.ID == GateHandedBack.ID {
			return c.Verdict == verify.Pass
		}
	}
	return false
}
