package fluxrepo

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// withDefaults fills the options a caller left zero: the root
// Kustomization flux-system/flux-system and DefaultMaxFileBytes.
func (o Options) withDefaults() Options {
	o.Namespace = fluxobj.NamespaceOr(o.Namespace, fluxobj.DefaultNamespace)
	if o.RootName == "" {
		o.RootName = fluxobj.DefaultRootName
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	return o
}

// checkInput holds o to the input rules before anything of the repository
// is copied: --repo a directory, --path a directory inside it whose
// kustomization file, if it has one, is a regular file of the repository
// (without one, the root is generated as kustomize-controller generates it
// for every path, the root included). It returns the repository's absolute path and the root's
// clean slash path.
func checkInput(o Options) (repo, root string, err error) {
	repo, err = filepath.Abs(o.Repo)
	if err != nil {
		return "", "", verify.InputErrorf("--repo %s: %w", o.Repo, err)
	}
	if st, err := os.Stat(repo); err != nil || !st.IsDir() {
		return "", "", verify.InputErrorf("--repo %s: not a directory: pass the GitOps repository's checkout", o.Repo)
	}
	root = cleanPath(o.Path)
	if !isLocal(root) {
		return "", "", verify.InputErrorf("--path %s: must be a directory inside --repo, e.g. clusters/dev", o.Path)
	}
	dir := filepath.Join(repo, filepath.FromSlash(root))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "", verify.InputErrorf("%s: no such directory in the repository %s: pass --env NAME for clusters/NAME, or --path%s", o.Path, repo,
			siblings(filepath.Dir(dir)))
	}
	if err := checkKustomizationFile(repo, o.Repo, root); err != nil {
		return "", "", err
	}
	if err := checkFluxInstanceFile(repo, o.FluxInstance); err != nil {
		return "", "", err
	}
	return repo, root, nil
}

// fluxInstanceFix is what every refusal of --flux-instance ends with.
const fluxInstanceFix = "name the file of the repository (relative to --repo) holding the FluxInstance, or the flux-instance chart values, whose spec.sync declares the root — or drop --flux-instance"

// checkFluxInstanceFile holds --flux-instance to the input rules before
// anything of the repository is copied: a regular file inside the
// repository, not a symlink (the artifact leaves links out, so the file
// would not be there for the Flux Operator either), bounded.
func checkFluxInstanceFile(repo, f string) error {
	if f == "" {
		return nil
	}
	rel := cleanPath(f)
	if !isLocal(rel) || rel == "." {
		return verify.InputErrorf("--flux-instance %s: not a file inside the repository: %s", f, fluxInstanceFix)
	}
	fi, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(rel)))
	switch {
	case err != nil:
		return verify.InputErrorf("--flux-instance %s: no such file in the repository %s: %s", f, repo, fluxInstanceFix)
	case fi.IsDir():
		return verify.InputErrorf("--flux-instance %s is a directory: %s", f, fluxInstanceFix)
	case fi.Mode()&os.ModeSymlink != 0:
		return verify.InputErrorf("--flux-instance %s is a symlink: source-controller leaves symlinks out of the artifact; commit the file itself, or %s", f, fluxInstanceFix)
	}
	rd, err := safeio.OpenDir(repo, "--repo "+repo)
	if err != nil {
		return err
	}
	defer rd.Close()
	if err := rd.Check(rel); err != nil {
		return verify.InputErrorf("--flux-instance %s: %w", f, err)
	}
	return nil
}

// siblings lists the environments next to a missing one, for the message.
func siblings(parent string) string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + filepath.Base(parent) + "/ has " + strings.Join(names, ", ") + ")"
}

// checkKustomizationFile holds the root's kustomization file, if there is
// one, to the input rule (inside the repository, regular, bounded), so a
// link to a device is named rather than taken for a missing file.
func checkKustomizationFile(repo, label, root string) error {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		rel := path.Join(root, n)
		if _, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(rel))); err != nil {
			continue
		}
		rd, err := safeio.OpenDir(repo, "--repo "+label)
		if err != nil {
			return err
		}
		defer rd.Close()
		return rd.Check(rel)
	}
	return nil
}
