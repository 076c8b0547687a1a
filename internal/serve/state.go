package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// State is what a serving process records in its state directory, for
// `bootstrap serve status|stop` and for the next --serve, which replaces it.
// Nothing secret: the token and key live only in the process and the
// cluster's Secret.
type State struct {
	PID int `json:"pid"`
	// URL is what the GitRepository reads (--serve-url or the listen address).
	URL string `json:"url"`
	// Listen is the bound address.
	Listen string `json:"listen"`
	// Log is the serving process's log file.
	Log string `json:"log"`
	// Cluster is the API server the state belongs to.
	Cluster string `json:"cluster"`
	// Namespace and Name are the GitRepository that reads the source.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Revision is the served branch and commit, as source-controller names it.
	Revision string `json:"revision"`
	// Origin says where the served commit came from.
	Origin  string    `json:"origin"`
	Started time.Time `json:"started"`
	Until   time.Time `json:"until"`
	// Repo is the snapshot's directory, removed when the process ends.
	Repo string `json:"repo"`
	// Kind is the served source's kind: GitRepository ("" in older
	// states) or OCIRepository (the snapshot's tree served as an artifact).
	Kind string `json:"kind,omitempty"`
	// Commit and Created make the served OCI artifact: its revision
	// annotation and creation time, so the serving process builds the
	// digest the parent proved.
	Commit  string    `json:"commit,omitempty"`
	Created time.Time `json:"created,omitempty"`
}

// OCI says the state serves an OCIRepository.
func (s *State) OCI() bool { return s.Kind == sourcev1.OCIRepositoryKind }

// Dirs locates the state of served sources.
type Dirs struct {
	// Root holds one directory per cluster.
	Root string
}

// DefaultDirs is $BOOTSTRAP_STATE_DIR, else $XDG_STATE_HOME/bootstrap, else
// ~/.local/state/bootstrap, with "serve" below it.
func DefaultDirs(getenv func(string) string) (Dirs, error) {
	if d := getenv("BOOTSTRAP_STATE_DIR"); d != "" {
		return Dirs{Root: filepath.Join(d, "serve")}, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return Dirs{Root: filepath.Join(d, "bootstrap", "serve")}, nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return Dirs{}, fmt.Errorf("serve: no state directory: set BOOTSTRAP_STATE_DIR: %w", err)
		}
	}
	return Dirs{Root: filepath.Join(home, ".local", "state", "bootstrap", "serve")}, nil
}

// For is the state directory of the cluster whose API server is host: one
// per cluster, so a second --serve for it finds (and replaces) the first.
func (d Dirs) For(host string) string {
	sum := sha256.Sum256([]byte(host))
	return filepath.Join(d.Root, hex.EncodeToString(sum[:8]))
}

const (
	stateFile = "state.json"
	lockFile  = "serve.lock"
	logFile   = "serve.log"
)

// ReadState reads dir's state; nil when there is none.
func ReadState(dir string) (*State, error) {
	p := filepath.Join(dir, stateFile)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	b, err := safeio.ReadFile(p, "serve state "+p)
	if err != nil {
		return nil, fmt.Errorf("serve state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("serve state %s: %w (remove the file if no server runs)", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

func writeState(dir string, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("serve state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// lock is the serving process's hold on its state directory: held for the
// process's life, so "is it running" never trusts a pid that may be reused.
type lock struct{ f *os.File }

// tryLock takes dir's lock without waiting; ok false when a server holds it.
func tryLock(dir string) (l *lock, ok bool, err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("serve lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("serve lock: %w", err)
	}
	return &lock{f: f}, true, nil
}

func (l *lock) release() { _ = l.f.Close() }

// Running says whether a serving process holds dir.
func Running(dir string) (bool, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	l, ok, err := tryLock(dir)
	if err != nil || !ok {
		return !ok && err == nil, err
	}
	l.release()
	return false, nil
}

// Stop ends the server serving from dir (SIGTERM, then SIGKILL after
// grace) and waits until it let go; it returns the state it stopped, nil
// when none ran.
func Stop(dir string, grace time.Duration) (*State, error) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	running, err := Running(dir)
	if err != nil {
		return nil, err
	}
	if !running {
		if st != nil {
			_ = os.Remove(filepath.Join(dir, stateFile))
			if st.Repo != "" {
				_ = os.RemoveAll(st.Repo)
			}
		}
		return nil, nil
	}
	if st == nil || st.PID <= 0 {
		return nil, fmt.Errorf("serve: a server holds %s but its state file is missing: stop it by hand (fuser %s)", dir, filepath.Join(dir, lockFile))
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0o600)
	if err != nil {
		return st, fmt.Errorf("serve lock: %w", err)
	}
	defer f.Close()
	// The lock comes free when the process is gone, whatever it did.
	gone := make(chan error, 1)
	go func() { gone <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		_ = syscall.Kill(st.PID, sig)
		select {
		case err := <-gone:
			return st, err
		case <-time.After(grace):
		}
	}
	return st, fmt.Errorf("serve: process %d did not stop", st.PID)
}

// WaitStopped waits up to timeout for the server serving from dir to end
// by itself; true when none runs (any more).
func WaitStopped(dir string, timeout time.Duration) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0o600)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	gone := make(chan error, 1)
	go func() { gone <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-gone:
		return err == nil
	case <-time.After(timeout):
		return false
	}
}
