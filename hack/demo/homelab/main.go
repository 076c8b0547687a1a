// Command homelab serves the demo's GitOps repository: the testdata/homelab
// fixture, with dev's source pointing at a sandbox Git server and a SOPS
// Secret encrypted to an age key generated for the demo. It writes
// DIR/repo (the working tree), DIR/age.key (mode 0600) and DIR/ready, then
// serves the repository until SIGTERM or SIGINT. Used by hack/demo.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
)

func main() {
	dir := flag.String("dir", "", "directory for the repository, the key and the Git server")
	fixture := flag.String("fixture", "testdata/homelab", "the fixture repository")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "homelab: --dir is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, *fixture); err != nil {
		fmt.Fprintln(os.Stderr, "homelab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, fixture string) error {
	key, recipient, err := agekeytest.NewIdentity()
	if err != nil {
		return err
	}
	enc, err := agekeytest.EncryptedSecret("homelab-secret", "homelab-s3cr3t", recipient)
	if err != nil {
		return err
	}
	srv, err := gitserver.Start(filepath.Join(dir, "git"), "")
	if err != nil {
		return err
	}
	defer srv.Close()
	repo := filepath.Join(dir, "repo")
	if err := os.CopyFS(repo, os.DirFS(fixture)); err != nil {
		return fmt.Errorf("copy %s: %w", fixture, err)
	}
	url := srv.URL + "/homelab.git"
	files := map[string]string{
		// Both sources (flux-system and shared) from the one sandbox repository.
		"clusters/dev/source.yaml": fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: %s\n", url) +
			fmt.Sprintf("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: shared\n  namespace: flux-system\nspec:\n  url: %s\n", url),
		"apps/secrets/secret.sops.yaml": enc,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "age.key"), []byte(key), 0o600); err != nil {
		return err
	}
	r, sha, err := srv.CreateRepo(ctx, "homelab", repo)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(url+" "+r.Revision(sha)+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("homelab: serving %s at %s\n", url, r.Revision(sha))
	<-ctx.Done()
	return nil
}
