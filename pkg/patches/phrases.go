package patches

import "fmt"

// Phrases are the words the proofs use for what their caller controls:
// skipping the overlays on purpose, choosing the controllers to render,
// giving an overlay, regenerating a committed gotk-components.yaml. A
// library names its options, a command line its flags; an empty field
// takes the library's word, shown with each field.
type Phrases struct {
	// Plain names skipping the overlays on purpose (Prove's plain):
	// "a plain render".
	Plain string
	// Components names where the controllers to render are chosen:
	// "Options.Components".
	Components string
	// StrictOverlay is what to apply to turn StrictPostBuildSubstitutions
	// on when the controller's version defaults it off: "an overlay that
	// appends --feature-gates=StrictPostBuildSubstitutions=true".
	StrictOverlay string
	// Regenerate says how to write the controllers, rendered with no
	// overlay, into dir, the directory of a committed gotk-components.yaml
	// that differs: "render this release with the same components and no
	// overlay into DIR".
	Regenerate func(dir string) string
}

// orDefault is p with every empty field set to the library's word.
func (p Phrases) orDefault() Phrases {
	if p.Plain == "" {
		p.Plain = "a plain render"
	}
	if p.Components == "" {
		p.Components = "Options.Components"
	}
	if p.StrictOverlay == "" {
		p.StrictOverlay = fmt.Sprintf("an overlay that appends --%s=%s=true", FeatureGatesFlag, StrictSubstitution)
	}
	if p.Regenerate == nil {
		p.Regenerate = func(dir string) string {
			return "render this release with the same components and no overlay into " + dir
		}
	}
	return p
}
