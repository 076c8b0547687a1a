// Package progress is the one progress printer of every command. On a
// terminal it keeps a live status line per phase (a spinner, the elapsed
// time, what it waits for) and prints each step above it; anywhere else it
// prints plain lines. NO_COLOR turns colour off; quiet prints nothing (the
// report's summary is still written by the command).
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Printer writes progress for people.
type Printer struct {
	w     io.Writer
	tty   bool
	color bool
	quiet bool

	mu      sync.Mutex
	phase   string
	started time.Time
	last    string
	frame   int
	stop    chan struct{}
	done    chan struct{}
}

// Options of a Printer.
type Options struct {
	// Quiet prints nothing.
	Quiet bool
	// Getenv reads NO_COLOR (os.Getenv when nil).
	Getenv func(string) string
	// TTY forces terminal mode on or off; nil detects it from w.
	TTY *bool
}

// New is a printer writing to w.
func New(w io.Writer, o Options) *Printer {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	tty := false
	if o.TTY != nil {
		tty = *o.TTY
	} else if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &Printer{w: w, tty: tty, color: tty && o.Getenv("NO_COLOR") == "", quiet: o.Quiet}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Start begins a phase: a live status line on a terminal, a header otherwise.
func (p *Printer) Start(phase string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.started, p.last = phase, time.Now(), ""
	if !p.tty {
		fmt.Fprintf(p.w, "== %s\n", phase)
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.spin(p.stop, p.done)
	p.drawLocked()
}

func (p *Printer) spin(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.frame++
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// drawLocked redraws the status line; p.mu is held.
func (p *Printer) drawLocked() {
	status := fmt.Sprintf("%s %s %s", spinner[p.frame%len(spinner)], p.phase, time.Since(p.started).Round(100*time.Millisecond))
	if p.last != "" {
		status += "  " + p.last
	}
	if w, _, err := termWidth(p.w); err == nil && w > 4 && len([]rune(status)) > w-1 {
		status = string([]rune(status)[:w-2]) + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", p.paint(status, "36"))
}

func termWidth(w io.Writer) (int, int, error) {
	if f, ok := w.(*os.File); ok {
		return term.GetSize(int(f.Fd()))
	}
	return 0, 0, fmt.Errorf("not a terminal")
}

// Line prints one step of the current phase.
func (p *Printer) Line(line string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		fmt.Fprintln(p.w, "  "+line)
		return
	}
	fmt.Fprintf(p.w, "\r\033[K  %s\n", line)
	p.last = strings.TrimSpace(line)
	p.drawLocked()
}

// Done ends the phase with its verdict and duration.
func (p *Printer) Done(phase, verdict string, took time.Duration) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	mark, code := map[string]string{"pass": "✓", "warn": "!", "fail": "✗", "skip": "-"}[verdict], map[string]string{"pass": "32", "warn": "33", "fail": "31", "skip": "33"}[verdict]
	if mark == "" {
		mark = "?"
	}
	line := fmt.Sprintf("%s %s: %s (%s)", mark, phase, verdict, took.Round(time.Millisecond))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", p.paint(line, code))
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *Printer) paint(s, code string) string {
	if !p.color {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}
