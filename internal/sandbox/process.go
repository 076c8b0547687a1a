package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child process of the sandbox, running in its own process
// group (so its children die with it) with stdout and stderr in a log file.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	// how it was started, for Again
	bin         string
	args, env   []string
	dir, logDir string

	mu       sync.Mutex
	waitErr  error
	stopping bool
}

// StartProcess starts bin with args and env (appended to a minimal base
// environment) in a new process group, logging to logDir/name.log.
func StartProcess(name, bin string, args, env []string, dir, logDir string) (*Process, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: create log dir: %w", name, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = append(baseEnv(), env...)
	// Own process group: teardown signals the whole group, so nothing a
	// component forks (git, for instance) outlives it.
	// Pdeathsig: if this process dies without tearing down (a test binary
	// killed by a timeout), the kernel kills the child too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "### %s %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, log: f, done: make(chan struct{}),
		bin: bin, args: args, env: env, dir: dir, logDir: logDir}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Again starts a new process with p's name, binary, arguments and
// environment, logging to the same file (appended). It does not stop p.
func (p *Process) Again() (*Process, error) {
	return StartProcess(p.Name, p.bin, p.args, p.env, p.dir, p.logDir)
}

// baseEnv is what every child sees: enough to run, nothing that could point
// it at a real cluster (KUBECONFIG) or a proxy.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Pid returns the process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Unexpected reports an exit that Stop did not cause, with the log tail.
func (p *Process) Unexpected() error {
	exited, err := p.Exited()
	if !exited {
		return nil
	}
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		return nil
	}
	return p.exitError(err)
}

func (p *Process) exitError(err error) error {
	how := "exited"
	if err != nil {
		how = err.Error()
	}
	return fmt.Errorf("%s (pid %d) died: %s; last lines of %s:\n%s", p.Name, p.Pid(), how, p.LogPath, p.Tail(20))
}

// Tail returns the last n lines of the process log.
func (p *Process) Tail(n int) string { return TailFile(p.LogPath, n) }

// TailFile returns the last n lines of a file (at most its last 64 KiB).
func TailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(b, nil)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group. It returns once the process has been reaped.
func (p *Process) Stop(grace time.Duration) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	pgid := p.Pid()
	select {
	case <-p.done:
		// The leader is gone; its group may not be.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// WaitReady polls check until it returns nil, the process dies, or ctx ends.
// Polling is right here: there is nothing to watch before the server listens.
func (p *Process) WaitReady(ctx context.Context, logger *slog.Logger, what string, check func(context.Context) error) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		if last = check(ctx); last == nil {
			logger.Debug("ready", "component", p.Name, "check", what)
			return nil
		}
		select {
		case <-p.done:
			_, err := p.Exited()
			return p.exitError(err)
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready (%s) before timeout: %v; last lines of %s:\n%s",
				p.Name, what, errors.Join(ctx.Err(), last), p.LogPath, p.Tail(20))
		case <-t.C:
		}
	}
}
