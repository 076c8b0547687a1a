package patches

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Proofs are the checks of a render: the components rendered (each
// Deployment's images as evidence), then Prove's. pkg/render.Run, the one
// render sequence, proves with it. fluxVersion and origin name the release
// and its bundle.
func Proofs(fluxVersion, origin string, res *Result, plain bool) []verify.Check {
	var images []string
	for _, d := range res.Final {
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, fmt.Sprintf("Deployment/%s/%s %s", d.Namespace, d.Name, c.Image))
		}
	}
	out := []verify.Check{GateComponents.Pass(
		fmt.Sprintf("Flux %s: %d Deployment(s) from the %s", fluxVersion, len(res.Final), origin), images...)}
	return append(out, Prove(res, plain)...)
}
