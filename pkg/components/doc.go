// Package components renders the Flux components of a pinned Flux release
// in-process, as `flux install --export` does, with flux2's manifestgen and
// without network access.
//
// The release is a bundle: the files of a Flux release's manifests.tar.gz
// (<component>.yaml for each controller, rbac.yaml, policies.yaml). Options.Bundle
// gives it as an fs.FS — a directory (os.DirFS, NewBundle), an unpacked
// tarball (ExtractBundle), or one of the releases this module embeds
// (pkg/components/bundles; EmbeddedBundle) — and a nil Bundle takes the
// embedded release Options.FluxVersion names.
//
//	r, err := components.Generate(ctx, components.DefaultOptions("v2.4.0"))
//
// Refused options are *OptionError values naming the Options field;
// a directory or tarball that is not a bundle is a *BundleError.
package components
