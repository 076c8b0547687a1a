package fluxrelease

import (
	"fmt"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// ForEnv is the one resolution every command makes (check, and up,
// controllers, sync and status over an environment): Resolve with this
// build's tables — the pinned default (versions.env FLUX_VERSION), the
// embedded releases and the Flux Operator's releases. explicit is the
// release chosen on the command line, by --versions-file or the
// environment ("": none), from says how.
//
// The repository's own bootstrap (bootstrapfiles.Read of env.Repo) is
// read for the Flux install it applies (FormBootstrap).
func ForEnv(env *fluxrepo.Env, explicit, from string) (Release, error) {
	b, err := bootstrapfiles.Read(env.Repo)
	if err != nil {
		return Release{}, err
	}
	return ForEnvWith(env, explicit, from, b)
}

// ForEnvWith is ForEnv with the repository's bootstrap already read (nil:
// none).
func ForEnvWith(env *fluxrepo.Env, explicit, from string, b *bootstrapfiles.Bootstrap) (Release, error) {
	o, err := BuildOptions(explicit, from)
	if err != nil {
		return Release{}, err
	}
	if b != nil {
		o.Bootstrap = b.Installs
	}
	return Resolve(env, o), nil
}

// BuildOptions are Resolve's options with this build's tables.
func BuildOptions(explicit, from string) (Options, error) {
	pins, err := versions.Load()
	if err != nil {
		return Options{}, err
	}
	embedded, err := components.EmbeddedVersions()
	if err != nil {
		return Options{}, err
	}
	return Options{Explicit: explicit, ExplicitFrom: from, Default: pins.FluxVersion,
		Embedded: embedded, OperatorMaxFlux: pins.OperatorMaxFlux}, nil
}

// Chosen is the release of a run without an environment to read: the
// explicit one, else the default.
func Chosen(explicit, from, def string) Release {
	if explicit != "" {
		if from == "" {
			from = "--flux-version"
		}
		return Release{Version: explicit, From: FromFlag, Declared: from}
	}
	return Release{Version: def, From: FromDefault}
}

// Installable says whether the release can be installed as the repository
// declares it: an explicit choice and the default can (their flags were
// checked against the embedded bundles), a declaration only when this
// build embeds the very release it names, or one of the range it names.
// check judges a repository declaring a release not embedded by the
// nearest embedded one and says so (a fact about its objects holds across
// a minor's patch releases); a run that installs the controllers would
// install another release than the one the repository then applies over
// them, so it is refused, naming the embedded releases and the fix.
// embedded are this build's releases.
func (r Release) Installable(embedded []string) error {
	if r.From != FromRepository {
		return nil
	}
	fix := "; pass --flux-version with one of them (the repository's own declaration then moves the controllers to its release when the root applies it), or --manifests DIR|TARBALL with the manifests of the release it declares"
	list := strings.Join(embedded, ", ")
	var why string
	switch {
	case r.Fails != "":
		return verify.InputErrorf("%s %q at %s: %s; fix: %s (or pass --flux-version with one of the embedded releases: %s)", r.Form, r.Declared, r.Location, r.Fails, r.Fix, list)
	case r.Old:
		why = fmt.Sprintf("Flux %s, declared by %s at %s, is older than every release embedded in this build (%s)", r.Declared, r.Form, r.Location, list)
	case r.Fallback && r.Unresolved != "":
		why = fmt.Sprintf("%s %q at %s names no release known offline (%s), so the release to install is not known; embedded: %s", r.Form, r.Declared, r.Location, r.Unresolved, list)
	case r.Fallback:
		why = fmt.Sprintf("%s %q at %s names no release this build embeds (%s)", r.Form, r.Declared, r.Location, list)
	case r.Judged != "":
		why = fmt.Sprintf("Flux %s, declared by %s at %s, is not embedded in this build (embedded: %s): the controllers phase installs only the release the repository declares, and check's nearest embedded release (%s) is not it", r.Declared, r.Form, r.Location, list, r.Version)
	default:
		return nil
	}
	return verify.InputErrorf("%s%s", why, fix)
}

// Line is the release as the first line of a run's plan: the fact, and
// what an explicit choice overrides.
func (r Release) Line() string {
	s := r.String()
	if r.From == FromFlag {
		for _, n := range r.Notes {
			if strings.Contains(n, " overrides ") {
				s += ": " + n
				break
			}
		}
	}
	return s
}
