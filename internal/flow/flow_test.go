package flow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/customize"
	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// homelab is the fixture repository's dev environment.
var homelab = rootsync.Options{Repo: "../../testdata/homelab", Path: "clusters/dev", Namespace: "flux-system", RootName: "flux-system"}

// taskfile is the flux-cluster-template layout: its root substitutes
// from what only it applies.
var taskfile = rootsync.Options{Repo: "../../testdata/layouts/taskfile", Path: "kubernetes/flux", Namespace: "flux-system", RootName: "cluster"}

// ctrlOptions are the controllers phase's options as the commands make
// them: the pinned release's defaults.
func ctrlOptions() *controllers.Options {
	pins, _ := versions.Load()
	return &controllers.Options{Render: customize.Options{Components: components.DefaultOptions(pins.FluxVersion)}}
}

// noCluster fails every connect: Assemble must not open the cluster.
func noCluster(t *testing.T) Cluster {
	return Cluster{Connect: func() (*apply.Cluster, error) {
		t.Error("Assemble opened the cluster")
		return nil, errors.New("no cluster")
	}}
}

func names(p *Plan) []string {
	var out []string
	for _, ph := range p.Phases {
		out = append(out, ph.Name())
	}
	return out
}

// TestAssembleOrder: each command's phases, in the one order, and only
// those it selects.
func TestAssembleOrder(t *testing.T) {
	conv := converge.DefaultOptions()
	for _, tc := range []struct {
		name string
		o    Options
		want []string
		warn string
	}{
		{"up", Options{Env: homelab, Static: &Static{}, Controllers: ctrlOptions(), Sync: &Sync{CutoverWhenReady: true, CutoverWait: time.Minute}, Converge: &conv},
			[]string{"static", "controllers", "sync", "converge", "cutover"}, ""},
		{"sync --check=false --converge=false", Options{Env: homelab, Sync: &Sync{}},
			[]string{"sync"}, "--check=false"},
		{"sync", Options{Env: homelab, Static: &Static{}, Sync: &Sync{}, Converge: &conv},
			[]string{"static", "sync", "converge"}, ""},
		{"cutover", Options{Cutover: &cutover.Options{Namespace: "flux-system", Name: "flux-system"}, Converge: &conv},
			[]string{"cutover", "converge"}, ""},
		// A root substituting from what only it applies: the inputs phase
		// (seeds, supplied objects) before the first write.
		{"up of a root with seeds", Options{Env: taskfile, Static: &Static{}, Controllers: ctrlOptions(), Sync: &Sync{}, Converge: &conv},
			[]string{"static", "inputs", "controllers", "sync", "converge"}, ""},
		{"sync of a root with seeds", Options{Env: taskfile, Sync: &Sync{}},
			[]string{"inputs", "sync"}, "--check=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Timeout, tc.o.Cluster = time.Minute, noCluster(t)
			r := verify.NewReport("test")
			p, err := Assemble(context.Background(), tc.o, r)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := names(p); !slices.Equal(got, tc.want) {
				t.Errorf("phases %v, want %v", got, tc.want)
			}
			if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, tc.warn) || (tc.warn == "" && w != "") {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
		})
	}
}

// TestAssembleRefusesBeforeTheCluster: an environment that does not build
// and a sync without one are refused by Assemble, before any request.
func TestAssembleRefusesBeforeTheCluster(t *testing.T) {
	bad := homelab
	bad.Path = "clusters/nosuchenv"
	_, err := Assemble(context.Background(), Options{Env: bad, Sync: &Sync{}, Cluster: noCluster(t)}, verify.NewReport("test"))
	if !verify.IsInput(err) || !strings.Contains(err.Error(), "clusters/nosuchenv") {
		t.Errorf("an environment that does not build: %v, want an input error naming it", err)
	}
	if _, err := Assemble(context.Background(), Options{Sync: &Sync{}, Cluster: noCluster(t)}, verify.NewReport("test")); err == nil {
		t.Error("a sync without an environment was assembled")
	}
}

// TestAssembleRefusesThePlaceholder: flux bootstrap's placeholder
// (testdata/layouts/placeholder) declares a root whose URL git does not
// hold: up and sync refuse it before the first request (the controllers
// phase would otherwise apply first), naming the flags that declare the
// real source; with them it assembles.
func TestAssembleRefusesThePlaceholder(t *testing.T) {
	env := rootsync.Options{Repo: "../../testdata/layouts/placeholder", Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system"}
	_, err := Assemble(context.Background(), Options{Env: env, Static: &Static{}, Controllers: ctrlOptions(), Sync: &Sync{}, Cluster: noCluster(t)}, verify.NewReport("test"))
	if !verify.IsInput(err) || !strings.Contains(err.Error(), "clusters/staging/flux-system/gotk-sync.yaml is flux bootstrap's placeholder") || !strings.Contains(err.Error(), "--source-kind GitRepository --source-url URL") {
		t.Fatalf("err = %v, want the input error naming the placeholder and the flags", err)
	}
	// A path with no root (a tenant path passes the offline check with a
	// note): up refuses it before its controllers phase applies.
	tenant := env
	tenant.Path = "tenants/team-a"
	_, err = Assemble(context.Background(), Options{Env: tenant, Static: &Static{}, Controllers: ctrlOptions(), Sync: &Sync{}, Cluster: noCluster(t)}, verify.NewReport("test"))
	if !verify.IsInput(err) || !strings.Contains(err.Error(), "tenants/team-a renders no root Kustomization flux-system/flux-system and nothing declares one: declare it with --source-kind GitRepository --source-url URL") {
		t.Fatalf("tenant path: err = %v", err)
	}
	env.Sync = &fluxrepo.Sync{Kind: "GitRepository", URL: "https://git.example.invalid/fleet/fork.git", Ref: "refs/heads/main"}
	if _, err := Assemble(context.Background(), Options{Env: env, Static: &Static{}, Sync: &Sync{}, Cluster: noCluster(t)}, verify.NewReport("test")); err != nil {
		t.Fatalf("with --source-kind GitRepository --source-url: %v", err)
	}
}

// TestDeclare: the converge graph is every Kustomization the environment
// declares, named by its path.
func TestDeclare(t *testing.T) {
	r, err := rootsync.Build(homelab)
	if err != nil {
		t.Fatal(err)
	}
	o := converge.DefaultOptions()
	Declare(&o, r)
	if len(o.Declared) != len(r.Env.Kustomizations) || len(o.Declared) == 0 || !strings.HasPrefix(o.From, "the repository clusters/dev") {
		t.Errorf("declared %d of %d Kustomizations, from %q", len(o.Declared), len(r.Env.Kustomizations), o.From)
	}
}
