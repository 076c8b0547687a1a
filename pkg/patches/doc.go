// Package patches applies controller overlays to the rendered Flux
// components with the kustomize api, and proves each patch landed: every
// patch changed something, no generated container arg was lost, and the
// controllers' effective flags hold the invariants this tool exists for.
//
// An overlay is a kustomization directory (LoadOverlay; or the `flux
// bootstrap` layout's flux-system directory, LoadRepositoryOverlay) or
// inline patches (InlineOverlay, as a FluxInstance's spec.kustomize.patches).
// Apply applies its patches one at a time, so each one's effect is
// attributed to it; Prove and Proofs turn the result into pkg/verify checks,
// which name what the caller controls (skipping the overlays, the
// components) in the caller's words when it gives them (Phrases).
//
// The proofs read the controllers' flags as the controllers do: ParseArgs
// merges --feature-gates as fluxcd/pkg/runtime/features does, and
// EffectiveGate resolves a gate from the args or, else, from the gate table
// of the controller's version (SupportedGates: every gate and its default
// of each controller version the embedded bundles deploy, read from each
// controller's internal/features by hack/gengates into gatedefaults.txt).
package patches
