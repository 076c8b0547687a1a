// Command genbundles extracts the Flux release bundles listed in versions.env
// from the pinned bundle module's zip into pkg/components/bundles/flux, after
// checking the zip against the h1: sum pinned in versions.env.
//
// The output is committed (docs/development.md, "Flux release bundles"), so
// it must be a function of versions.env alone: the files are the zip's bytes,
// the stamp lists the pin and the versions in versions.env's order, and
// nothing records a time, a path or an order of the file system. -check
// regenerates into a temporary directory and compares it with the committed
// one, byte for byte, both ways (make check-generated).
//
// Refresh the committed bundles after changing versions.env with
// `go generate ./pkg/components/bundles` (make generate).
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
	check := flag.Bool("check", false, "write nothing: regenerate into a temporary directory and fail unless -out holds the same files, byte for byte")
	flag.Parse()
	run := run
	if *check {
		run = checkDir
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "genbundles:", err)
		os.Exit(1)
	}
}

// stampFile records what the bundles directory was extracted from, so an
// unchanged pin skips the work.
const stampFile = ".stamp"

// stamp is the content of stampFile for pins.
func stamp(pins versions.Pins) string {
	return fmt.Sprintf("%s@%s %s %s\n", pins.BundleModule, pins.BundleModuleVersion, pins.BundleModuleSum, strings.Join(pins.EmbeddedFluxVersions, ","))
}

func run(out string) error {
	pins, err := versions.Load()
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(filepath.Join(out, stampFile)); err == nil && string(old) == stamp(pins) {
		fmt.Printf("genbundles: %s up to date (%s)\n", out, strings.Join(pins.EmbeddedFluxVersions, ", "))
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".bundles-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := generate(pins, tmp); err != nil {
		return err
	}
	// Keep the committed README; replace everything else.
	if readme, err := os.ReadFile(filepath.Join(out, readmeFile)); err == nil {
		if err := os.WriteFile(filepath.Join(tmp, readmeFile), readme, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// readmeFile is written by hand, not generated: -check ignores it.
const readmeFile = "README.md"

// generate extracts the pinned bundles and the stamp into the empty
// directory dir.
func generate(pins versions.Pins, dir string) error {
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

	for _, fv := range pins.EmbeddedFluxVersions {
		prefix := fmt.Sprintf("%s@%s/config/data/flux/%s/", pins.BundleModule, pins.BundleModuleVersion, fv)
		n, err := extract(&zr.Reader, prefix, filepath.Join(dir, fv))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s@%s has no bundle for Flux %s (under config/data/flux/%s); pick a listed version in FLUX_EMBEDDED_VERSIONS",
				pins.BundleModule, pins.BundleModuleVersion, fv, fv)
		}
		fmt.Printf("genbundles: Flux %s: %d files\n", fv, n)
	}
	return os.WriteFile(filepath.Join(dir, stampFile), []byte(stamp(pins)), 0o644)
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
