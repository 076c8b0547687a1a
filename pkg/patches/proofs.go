package patches

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Proofs are the checks of a render: the components rendered (each
// Deployment's images as evidence), then Prove's, in the library's words
// (Phrases.Proofs with the zero Phrases). fluxVersion and origin name the
// release and its bundle.
func Proofs(fluxVersion, origin string, res *Result, plain bool) []verify.Check {
	return Phrases{}.Proofs(fluxVersion, origin, res, plain)
}

// Proofs is the package's Proofs in p's words. pkg/render.Run, the one
// render sequence, proves with it.
func (p Phrases) Proofs(fluxVersion, origin string, res *Result, plain bool) []verify.Check {
	var images []string
	for _, d := range res.Final {
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, fmt.Sprintf("Deployment/%s/%s %s", d.Namespace, d.Name, c.Image))
		}
	}
	out := []verify.Check{GateComponents.Pass(
		fmt.Sprintf("Flux %s: %d Deployment(s) from the %s", fluxVersion, len(res.Final), origin), images...)}
	return append(out, p.Prove(res, plain)...)
}
