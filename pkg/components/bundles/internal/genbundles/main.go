// Command genbundles extracts the Flux release bundles listed in versions.env
// from the pinned bundle module's zip into pkg/components/bundles/flux, after
// checking the zip against the h1: sum pinned in versions.env.
//
// Run it through `go generate ./pkg/components/bundles` (or `make generate`).
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/homelab-ops/bootstrap/internal/versions"
)

func main() {
	out := flag.String("out", "bundles", "directory to write <flux-version>/*.yaml into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "genbundles:", err)
		os.Exit(1)
	}
}

// stampFile records what the bundles directory was extracted from, so an
// unchanged pin skips the work.
const stampFile = ".stamp"

func run(out string) error {
	pins, err := versions.Load()
	if err != nil {
		return err
	}
	stamp := fmt.Sprintf("%s@%s %s %s\n", pins.BundleModule, pins.BundleModuleVersion, pins.BundleModuleSum, strings.Join(pins.EmbeddedFluxVersions, ","))
	if old, err := os.ReadFile(filepath.Join(out, stampFile)); err == nil && string(old) == stamp {
		fmt.Printf("genbundles: %s up to date (%s)\n", out, strings.Join(pins.EmbeddedFluxVersions, ", "))
		return nil
	}

	zipPath, err := download(pins)
	if err != nil {
		return err
	}
	// Check the bytes we are about to read, not only what the go command said.
	sum, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return fmt.Errorf("hash %s: %w", zipPath, err)
	}
	if sum != pins.BundleModuleSum {
		return fmt.Errorf("%s@%s: zip %s has sum %s, versions.env pins %s; refusing to extract (clean the module cache entry or fix the pin)",
			pins.BundleModule, pins.BundleModuleVersion, zipPath, sum, pins.BundleModuleSum)
	}

	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open %s: %w", zipPath, err)
	}
	defer zr.Close()

	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".bundles-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, fv := range pins.EmbeddedFluxVersions {
		prefix := fmt.Sprintf("%s@%s/config/data/flux/%s/", pins.BundleModule, pins.BundleModuleVersion, fv)
		n, err := extract(&zr.Reader, prefix, filepath.Join(tmp, fv))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s@%s has no bundle for Flux %s (under config/data/flux/%s); pick a listed version in FLUX_EMBEDDED_VERSIONS",
				pins.BundleModule, pins.BundleModuleVersion, fv, fv)
		}
		fmt.Printf("genbundles: Flux %s: %d files\n", fv, n)
	}
	if err := os.WriteFile(filepath.Join(tmp, stampFile), []byte(stamp), 0o644); err != nil {
		return err
	}
	// Keep the committed README; replace everything else.
	if readme, err := os.ReadFile(filepath.Join(out, "README.md")); err == nil {
		if err := os.WriteFile(filepath.Join(tmp, "README.md"), readme, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// download puts the module zip in the module cache and returns its path.
func download(pins versions.Pins) (string, error) {
	mod := pins.BundleModule + "@" + pins.BundleModuleVersion
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	// Outside any module, so the main module's go.mod is not consulted.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if tc := pins.All["FLUX_BUNDLE_GOTOOLCHAIN"]; tc != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+tc)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct {
		Zip, Sum, Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil || info.Zip == "" {
		return "", fmt.Errorf("go mod download %s: %v %s %s", mod, runErr, strings.TrimSpace(stderr.String()), info.Error)
	}
	if info.Sum != pins.BundleModuleSum {
		return "", fmt.Errorf("go mod download %s reports sum %s, versions.env pins %s", mod, info.Sum, pins.BundleModuleSum)
	}
	return info.Zip, nil
}

// extract copies the regular files directly under prefix into dir.
func extract(zr *zip.Reader, prefix, dir string) (int, error) {
	n := 0
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) || f.FileInfo().IsDir() {
			continue
		}
		rel := strings.TrimPrefix(f.Name, prefix)
		if rel != path.Base(rel) || !strings.HasSuffix(rel, ".yaml") {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return n, err
		}
		if err := copyOut(f, filepath.Join(dir, rel)); err != nil {
			return n, fmt.Errorf("extract %s: %w", f.Name, err)
		}
		n++
	}
	return n, nil
}

func copyOut(f *zip.File, dst string) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
