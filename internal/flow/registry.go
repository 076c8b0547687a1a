package flow

import (
	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/status"
)

// Every is one of each phase a command can run, in the order of a run
// (up's phases, then status's own): the gates they declare are the gate
// reference (docgen).
func Every() []pipeline.Phase {
	return []pipeline.Phase{
		&check.Phase{},
		&check.Every{},
		rootsync.NewInputsPhase(nil, nil),
		controllers.NewPhase(controllers.Options{}, nil),
		agekey.NewInstallPhase(agekey.Input{}, agekey.Options{}, nil),
		agekey.NewVerifyPhase(agekey.Options{}, nil),
		rootsync.NewPhase(rootsync.RunOptions{}, nil),
		converge.NewPhase(nil, converge.Options{}),
		cutover.NewPhase(cutover.Options{}, nil),
		cutover.NewWhenReadyPhase(cutover.WhenReadyOptions{}, nil),
		controllers.NewStatusPhase(controllers.StatusOptions{}, nil),
		status.NewSourcePhase(status.SourceOptions{}, nil),
		status.NewReadOnlyPhase(nil),
	}
}

// StatusOptions are status's phases' inputs, the flags already read.
type StatusOptions struct {
	// Controllers is the controllers' read-only phase's.
	Controllers controllers.StatusOptions
	// Converge is the converge read's: its Namespace and Root set.
	Converge converge.Options
	// Env is the environment built (nil: the cluster alone). With it the
	// converge graph is the repository's and the age-key Secret is
	// verified.
	Env *rootsync.Render
	// AgeKey is the age-key verification's (with Env, whose repository
	// model it reads).
	AgeKey agekey.Options
	// Connect opens the cluster, read only.
	Connect func() (*apply.Cluster, error)
	// AgeKeyConnect is Connect as the age-key phase takes it.
	AgeKeyConnect agekey.Connect
	// Requests records what Connect's transport sent (the read-only proof).
	Requests *kube.Requests
}

// Status is status's read-only phases in their order: controllers,
// age-key (with an environment), sync, converge, and the read-only proof.
func Status(o StatusOptions) []pipeline.Phase {
	phases := []pipeline.Phase{controllers.NewStatusPhase(o.Controllers, o.Connect)}
	co := o.Converge
	if o.Env != nil {
		Declare(&co, o.Env)
		ao := o.AgeKey
		ao.Env = o.Env.Env
		phases = append(phases, agekey.NewVerifyPhase(ao, o.AgeKeyConnect))
	}
	return append(phases,
		status.NewSourcePhase(status.SourceOptions{Root: co.Root, Render: o.Env}, o.Connect),
		converge.NewStatusPhase(o.Connect, co),
		status.NewReadOnlyPhase(o.Requests))
}
