package safeio

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// seedYAML adds the YAML files under the repository's testdata/ as seeds.
func seedYAML(f *testing.F, add func(b []byte)) {
	f.Helper()
	_ = filepath.WalkDir("../../testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && len(b) < 4<<10 {
			add(b)
		}
		return nil
	})
}

// FuzzAliasBomb: AliasBomb never panics on any bytes, and every document
// go.yaml.in/yaml/v3 itself refuses for excessive aliasing (the rule it
// copies) is one AliasBomb refuses too, before anything expands it.
func FuzzAliasBomb(f *testing.F) {
	seedYAML(f, func(b []byte) { f.Add(b) })
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n"))
	f.Add([]byte("a: &a x\n---\nb: *a\n"))
	f.Add([]byte("{\"json\": \"&not *an alias\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		line, why := AliasBomb(b)
		if why == "" && line != 0 {
			t.Fatalf("AliasBomb = line %d with no reason", line)
		}
		if why != "" {
			return
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var v any
			err := dec.Decode(&v)
			if err == nil {
				continue
			}
			if strings.Contains(err.Error(), "excessive aliasing") {
				t.Fatalf("yaml.v3 refuses %q (%v), AliasBomb let it through", b, err)
			}
			return
		}
	})
}

// FuzzBoundedRead: the bounded reads return the bytes when they fit and an
// error when they do not, and a Dir never reads a file outside its root
// whatever name it is given.
func FuzzBoundedRead(f *testing.F) {
	f.Add([]byte("kind: Kustomization\n"), int64(64), "a.yaml")
	f.Add([]byte("x"), int64(0), "../outside")
	f.Add([]byte(""), int64(1), "/etc/passwd")
	f.Add([]byte("0123456789"), int64(9), "link")
	f.Add([]byte("0123456789"), int64(10), "sub/../a.yaml")
	// One directory per fuzzing process (its executions run one at a
	// time): a root holding a.yaml, sub/ and a symlink out to a file
	// beside it.
	top := f.TempDir()
	root := filepath.Join(top, "root")
	outside := []byte("outside the root")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "outside"), outside, 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(root, "link")); err != nil {
		f.Fatal(err)
	}
	d, err := OpenDir(root, "--repo "+root)
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	f.Fuzz(func(t *testing.T, data []byte, max int64, name string) {
		if max < 0 || max > 1<<20 {
			max = int64(len(data))
		}
		got, err := ReadLimited(bytes.NewReader(data), max)
		switch {
		case int64(len(data)) <= max && (err != nil || !bytes.Equal(got, data)):
			t.Fatalf("ReadLimited(%d bytes, %d) = %d bytes, %v; want them all", len(data), max, len(got), err)
		case int64(len(data)) > max && err == nil:
			t.Fatalf("ReadLimited(%d bytes, %d) read %d bytes without an error", len(data), max, len(got))
		}

		must(t, os.WriteFile(filepath.Join(root, "a.yaml"), data, 0o644))
		b, err := d.ReadFileMax(name, max)
		if err == nil && bytes.Equal(b, outside) && !bytes.Equal(data, outside) {
			t.Fatalf("Dir.ReadFileMax(%q) read the file outside the root", name)
		}
		if err == nil && int64(len(b)) > max {
			t.Fatalf("Dir.ReadFileMax(%q, %d) read %d bytes", name, max, len(b))
		}
		if f, err := d.Open(name); err == nil {
			b, _ := io.ReadAll(io.LimitReader(f, int64(len(outside))+1))
			_ = f.Close()
			if bytes.Equal(b, outside) && !bytes.Equal(data, outside) {
				t.Fatalf("Dir.Open(%q) opened the file outside the root", name)
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
