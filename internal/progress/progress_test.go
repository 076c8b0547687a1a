package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPlainLines(t *testing.T) {
	var b bytes.Buffer
	off := false
	p := New(&b, Options{TTY: &off, Getenv: func(string) string { return "" }})
	p.Start("controllers")
	p.Line("waiting for 6 Deployment(s)")
	p.Done("controllers", "pass", 1500*time.Millisecond)
	want := "== controllers\n  waiting for 6 Deployment(s)\n✓ controllers: pass (1.5s)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	if strings.Contains(b.String(), "\033[") {
		t.Error("escape codes outside a terminal")
	}
}

func TestTerminal(t *testing.T) {
	on := true
	for _, tt := range []struct {
		noColor string
		color   bool
	}{{"", true}, {"1", false}} {
		var b bytes.Buffer
		p := New(&b, Options{TTY: &on, Getenv: func(k string) string {
			if k == "NO_COLOR" {
				return tt.noColor
			}
			return ""
		}})
		p.Start("sync")
		p.Line("waiting for GitRepository flux-system/flux-system")
		time.Sleep(250 * time.Millisecond) // the spinner redraws the status line
		p.Done("sync", "fail", time.Second)
		out := b.String()
		if !strings.Contains(out, "\r\033[K") || !strings.Contains(out, "sync") || !strings.Contains(out, "✗ sync: fail (1s)") {
			t.Errorf("no live status line: %q", out)
		}
		if got := strings.Contains(out, "\033[3"); got != tt.color {
			t.Errorf("NO_COLOR=%q: colour %v, want %v", tt.noColor, got, tt.color)
		}
	}
}

func TestQuiet(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, Options{Quiet: true})
	p.Start("x")
	p.Line("y")
	p.Done("x", "pass", 0)
	if b.Len() != 0 {
		t.Errorf("quiet printed %q", b.String())
	}
}
