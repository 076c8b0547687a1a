package check

// detRace is the [race] row of the table of detectors.
var detRace = detector{ID: RaceDep, Gate: Race, Advisory: true,
	Short: "substitution race: substitutes from an object another Kustomization applies without depending on it",
	Rule:  "kustomize-controller v1.9.5 loads substituteFrom before it applies (kustomization_controller.go); dependsOn is revision-gated only within one source (fluxobj.RevisionGated)",
}
