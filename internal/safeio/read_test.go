package safeio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func TestDirRefuses(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("kind: List\n"), 0o600))
	must(os.Symlink("ok.yaml", filepath.Join(dir, "inside.yaml")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.yaml")))
	must(os.Symlink("../../../../../../etc/passwd", filepath.Join(dir, "relative-out.yaml")))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	big, err := os.Create(filepath.Join(dir, "big.yaml"))
	must(err)
	must(big.Truncate(MaxFileSize + 1)) // sparse: costs no disk
	must(big.Close())
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o600))

	d, err := OpenDir(dir, "--overlays "+dir)
	must(err)
	defer d.Close()
	for _, name := range []string{"ok.yaml", "inside.yaml"} {
		if b, err := d.ReadFile(name); err != nil || string(b) != "kind: List\n" {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	for name, want := range map[string]string{
		"zero.yaml":         "zero.yaml (a symlink to /dev/zero) points outside the directory",
		"passwd.yaml":       "passwd.yaml (a symlink to /etc/passwd) points outside the directory",
		"relative-out.yaml": "points outside the directory",
		"big.yaml":          "more than the 33554432-byte limit",
		"fifo.yaml":         "is not a regular file (a named pipe)",
		"sub":               "is a directory",
	} {
		_, err := d.ReadFile(name)
		if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--overlays "+dir) {
			t.Errorf("ReadFile(%s) = %v; want an input error naming --overlays and saying %q", name, err, want)
		}
		if _, err := fs.ReadFile(d, name); err == nil {
			t.Errorf("fs.ReadFile(%s) read it", name)
		}
	}
	if _, err := d.ReadFile("missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := OpenDir(filepath.Join(dir, "ok.yaml"), "--overlays x"); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("OpenDir on a file: %v", err)
	}
	for p, want := range map[string]string{"/dev/zero": "a character device", filepath.Join(dir, "zero.yaml"): "a character device", filepath.Join(dir, "big.yaml"): "bytes, more than"} {
		if _, err := ReadFile(p, "--manifests "+p); err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile(%s) = %v, want %q", p, err, want)
		}
	}
}
