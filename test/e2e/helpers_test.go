//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/wait"
)

var (
	buildOnce sync.Once
	cliPath   string
	cliErr    error
)

// bootstrapCLI builds ./cmd/bootstrap once per suite: the render contract
// with the product is its command line.
func bootstrapCLI(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bootstrap-e2e-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-o", cliPath, "./cmd/bootstrap")
		cmd.Dir = suite.root
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("go build ./cmd/bootstrap (the Flux bundles are committed in pkg/components/bundles/flux: restore them with git if missing): %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// render runs `bootstrap render` and returns its objects.
func render(t testing.TB, args ...string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(bootstrapCLI(t), append([]string{"render"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bootstrap render %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	objs, err := ssautils.ReadObjects(&stdout)
	if err != nil {
		t.Fatalf("parse render output: %v", err)
	}
	if len(objs) == 0 {
		t.Fatalf("bootstrap render printed no objects; stderr:\n%s", stderr.String())
	}
	return objs
}

func resourceManager() *ssa.ResourceManager {
	poller := polling.NewStatusPoller(suite.client, suite.client.RESTMapper(), polling.Options{})
	return ssa.NewResourceManager(suite.client, poller, ssa.Owner{Field: "bootstrap-e2e", Group: "e2e.bootstrap.homelab-ops"})
}

// waitFor waits with the product's own wait (list, then watch) on c until
// cond holds, and fails the test with the last state otherwise.
func waitFor[T client.Object](ctx context.Context, t *testing.T, c client.WithWatch, list client.ObjectList, ns, name string, cond func(T) (bool, string)) T {
	t.Helper()
	obj, err := wait.For(ctx, c, list, ns, name, cond)
	if err != nil {
		t.Fatalf("waiting for %s", err)
	}
	return obj
}

// readyStatus describes a Flux object's Ready condition.
func readyStatus(gen int64, conds []metav1.Condition) (status metav1.ConditionStatus, reason, msg string, current bool) {
	c := apimeta.FindStatusCondition(conds, "Ready")
	if c == nil {
		return metav1.ConditionUnknown, "", "no Ready condition yet", false
	}
	return c.Status, c.Reason, c.Message, c.ObservedGeneration == gen
}

func timeoutCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// requestReconcile is `flux reconcile` without the flux binary: the
// requestedAt annotation that every Flux controller watches.
func requestReconcile(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if err := suite.client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("request reconcile of %s: %v", obj.GetName(), err)
	}
}

// cliReport is the part of a bootstrap JSON report the e2e tests read.
type cliReport struct {
	Verdict  string
	ExitCode int
	Changed  bool
	DryRun   bool
	Warnings []string
	Error    string
	Checks   []struct {
		ID, Verdict, Message string
		Evidence             []string
	}
	Objects []struct {
		Object   string
		Action   string
		Restarts bool
	}
	Facts map[string]string
}

// check is "verdict: message" of the check id, or "missing".
func (r cliReport) check(id string) string {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Verdict + ": " + c.Message
		}
	}
	return "missing"
}

// evidence is the evidence of the check id, one line each.
func (r cliReport) evidence(id string) string {
	for _, c := range r.Checks {
		if c.ID == id {
			return strings.Join(c.Evidence, "\n")
		}
	}
	return ""
}

// runJSON runs a prepared `bootstrap … -o json` command and fails the test
// unless stdout is one JSON report whose exitCode is the process's.
func runJSON(t testing.TB, cmd *exec.Cmd) (code int, stdout, stderr string, r cliReport) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	code, stdout, stderr = cmd.ProcessState.ExitCode(), o.String(), e.String()
	if err := json.Unmarshal(o.Bytes(), &r); err != nil {
		t.Fatalf("%s: stdout is not a JSON report: %v\n%s\n%s", strings.Join(cmd.Args, " "), err, stdout, stderr)
	}
	if r.ExitCode != code {
		t.Fatalf("exit code %d but the report says %d", code, r.ExitCode)
	}
	return code, stdout, stderr, r
}

// stage is one named state of the shared sandbox that a chain of cases
// starts from, and how to reach it from the stage before (the first from
// ensureFlux).
type stage struct {
	name      string
	establish func(t *testing.T)
}

// stages lets every case of a chained scenario run alone (-run
// 'TestX/Case') and still cost little in a whole run. Like the gauntlet's
// named stages, the states follow each other in one order; unlike them, a
// case does not rely on the case before: it calls ensure with the stage it
// starts from, which establishes every stage up to that one — only those
// after the stage the sandbox is known to be at, when the cases before left
// it at one of this chain's stages (a whole run in order), else every stage
// from the first. A case that fails leaves the sandbox in a state nobody
// knows: the next case starts again from the first stage. A case whose own
// action is a stage's step says so with reached. E2E_STAGES=fresh makes
// every case start from the first stage, as if it ran alone.
type stages struct {
	list []stage
	at   int // index into list of the stage the sandbox is at; -1 unknown
}

func newStages(list ...stage) *stages { return &stages{list: list, at: -1} }

func (s *stages) index(t *testing.T, name string) int {
	t.Helper()
	for i, st := range s.list {
		if st.name == name {
			return i
		}
	}
	t.Fatalf("no stage %q", name)
	return -1
}

// ensure brings the sandbox to stage name, for the case t.
func (s *stages) ensure(t *testing.T, name string) {
	t.Helper()
	want := s.index(t, name)
	t.Cleanup(func() {
		if t.Failed() {
			s.at = -1
		}
	})
	if s.at > want || os.Getenv("E2E_STAGES") == "fresh" {
		s.at = -1 // a later stage cannot be undone (or asked not to reuse): start again
	}
	if s.at == want {
		t.Logf("stage %s: already there", name)
		return
	}
	t0, from := time.Now(), s.at
	for i := s.at + 1; i <= want; i++ {
		s.at = -1 // until the step has succeeded
		s.list[i].establish(t)
		s.at = i
	}
	var steps []string
	for _, st := range s.list[from+1 : want+1] {
		steps = append(steps, st.name)
	}
	t.Logf("stage %s: established in %s (%s)", name, time.Since(t0).Round(time.Millisecond), strings.Join(steps, ", "))
}

// reached records that the case, having passed so far, brought the sandbox
// to stage name.
func (s *stages) reached(t *testing.T, name string) {
	t.Helper()
	if !t.Failed() {
		s.at = s.index(t, name)
	}
}

// freshRepoName is base, or base-N when an earlier run in this process
// (another chain's first stage, -count) already created base.git on the
// suite's Git server.
func freshRepoName(base string) string {
	name := base
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(suite.git.Root, name+".git")); err != nil {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// sopsFixtureSecret is a fresh age identity and the fixture's Secret
// homelab-secret (apps/secrets/secret.sops.yaml) holding value, SOPS-
// encrypted to it.
func sopsFixtureSecret(t *testing.T, value string) (key, enc string) {
	t.Helper()
	key, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if enc, err = agekeytest.EncryptedSecret("homelab-secret", value, recipient); err != nil {
		t.Fatal(err)
	}
	return key, enc
}
