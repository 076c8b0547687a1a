package agekey_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
)

// TestScanFollowsKustomizeResources: the homelab's clusters/dev lists its
// Kustomizations through `resources: [../base]`; the scan must see them as
// kustomize-controller does, and find the encrypted file they decrypt.
func TestScanFollowsKustomizeResources(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.CopyFS(repo, os.DirFS("../../testdata/homelab")); err != nil {
		t.Fatal(err)
	}
	_, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := agekeytest.EncryptedSecret("homelab-secret", "v", recipient)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "apps/secrets/secret.sops.yaml"), []byte(enc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := agekey.Scan(repo, "clusters/dev", "flux-system", "sops-age", nil)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range s.Files {
		files = append(files, f.Path)
	}
	if !slices.Contains(files, "apps/secrets/secret.sops.yaml") {
		t.Fatalf("scan of clusters/dev found %v; want apps/secrets/secret.sops.yaml (Kustomizations: %v, notes: %v)", files, s.Kustomizations, s.Notes)
	}
}
