package input

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// checked records the last value set and what is wrong with it.
type checked struct {
	raw string
	err error
}

// Err is what is wrong with the value set last (nil when it is fine).
func (c *checked) Err() error { return c.err }

func (c *checked) record(raw string, err error) error {
	c.raw, c.err = raw, err
	return nil
}

// Check returns one input error naming every flag of fs whose value
// breaks its rule; nil when none does.
func Check(fs *pflag.FlagSet) error {
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		if v, ok := f.Value.(interface {
			Err() error
			Raw() string
		}); ok && v.Err() != nil {
			errs = append(errs, fmt.Sprintf("--%s %s: %v", f.Name, v.Raw(), v.Err()))
		}
	})
	if len(errs) == 0 {
		return nil
	}
	return verify.InputErrorf("%s", strings.Join(errs, "; "))
}

// Raw is the value as given.
func (c *checked) Raw() string { return c.raw }

// Duration is a positive duration (a timeout, a budget).
type Duration struct {
	checked
	p      *time.Duration
	zeroOK bool
}

// NewDurationOrZero is NewDuration for a flag whose 0 means "no limit".
func NewDurationOrZero(p *time.Duration, def time.Duration) *Duration {
	*p = def
	return &Duration{p: p, zeroOK: true}
}

// NewDuration sets *p to def and parses into it.
func NewDuration(p *time.Duration, def time.Duration) *Duration {
	*p = def
	return &Duration{p: p}
}

func (d *Duration) String() string { return d.p.String() }

// Type implements pflag.Value.
func (d *Duration) Type() string { return "duration" }

// Set implements pflag.Value.
func (d *Duration) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return d.record(v, fmt.Errorf("not a duration: pass a duration such as 5m or 90s"))
	}
	*d.p = x
	if x < 0 || (x == 0 && !d.zeroOK) {
		return d.record(x.String(), fmt.Errorf("must be positive: pass a duration such as 5m or 90s"))
	}
	return d.record(v, nil)
}

// Count is a non-negative number.
type Count struct {
	checked
	p *int
}

// NewCount sets *p to def and parses into it.
func NewCount(p *int, def int) *Count {
	*p = def
	return &Count{p: p}
}

func (c *Count) String() string { return strconv.Itoa(*c.p) }

// Type implements pflag.Value.
func (c *Count) Type() string { return "int" }

// Set implements pflag.Value.
func (c *Count) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return c.record(v, fmt.Errorf("not a whole number"))
	}
	*c.p = n
	if n < 0 {
		return c.record(v, fmt.Errorf("must be 0 or more"))
	}
	return c.record(v, nil)
}

// OutputFile is a file this tool writes: its directory must exist and be
// writable now, not after the run did its work; with a format check, its
// name must pass it too.
type OutputFile struct {
	checked
	p      *string
	format func(string) bool
	want   string
}

// NewOutputFile parses into *p ("" means no file).
func NewOutputFile(p *string) *OutputFile { return &OutputFile{p: p} }

// NewFormatFile is NewOutputFile for a file whose name says its format:
// format says whether a name is one the writer knows; want says which.
func NewFormatFile(p *string, format func(string) bool, want string) *OutputFile {
	return &OutputFile{p: p, format: format, want: want}
}

func (f *OutputFile) String() string { return *f.p }

// Type implements pflag.Value.
func (f *OutputFile) Type() string { return "FILE" }

// Set implements pflag.Value.
func (f *OutputFile) Set(v string) error {
	*f.p = v
	if v == "" {
		return f.record(v, nil)
	}
	if f.format != nil && !f.format(v) {
		return f.record(v, fmt.Errorf("name the file %s", f.want))
	}
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		return f.record(v, fmt.Errorf("is a directory: name a file in it"))
	}
	return f.record(v, writableDir(filepath.Dir(v)))
}

// OutputDir is a directory this tool writes into: created when missing,
// so only an existing path that is not a writable directory is refused.
type OutputDir struct {
	checked
	p *string
}

// NewOutputDir parses into *p ("" means none).
func NewOutputDir(p *string) *OutputDir { return &OutputDir{p: p} }

func (d *OutputDir) String() string { return *d.p }

// Type implements pflag.Value.
func (d *OutputDir) Type() string { return "DIR" }

// Set implements pflag.Value.
func (d *OutputDir) Set(v string) error {
	*d.p = v
	if _, err := os.Stat(v); v == "" || errors.Is(err, os.ErrNotExist) {
		return d.record(v, nil)
	}
	return d.record(v, writableDir(v))
}

func writableDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: create it first", dir)
	case err != nil:
		return fmt.Errorf("directory %s: %v", dir, err)
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory: pass a directory", dir)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("directory %s is not writable: %v", dir, err)
	}
	return nil
}

// Name is an object name (a DNS-1123 subdomain).
type Name struct {
	checked
	p    *string
	what string
}

// NewName sets *p to def and parses into it; what names the object for the
// fix ("root Kustomization").
func NewName(p *string, def, what string) *Name {
	*p = def
	return &Name{p: p, what: what}
}

func (n *Name) String() string { return *n.p }

// Type implements pflag.Value.
func (n *Name) Type() string { return "NAME" }

// Set implements pflag.Value.
func (n *Name) Set(v string) error {
	*n.p = v
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return n.record(fmt.Sprintf("%q", v), fmt.Errorf("not an object name: %s: pass the name of the %s, e.g. flux-system", strings.Join(errs, "; "), n.what))
	}
	return n.record(v, nil)
}

// Ref is NAME or NAMESPACE/NAME, each part checked; Split gives the parts.
type Ref struct {
	checked
	p *string
}

// NewRef sets *p to def and parses into it.
func NewRef(p *string, def string) *Ref {
	*p = def
	return &Ref{p: p}
}

func (r *Ref) String() string { return *r.p }

// Type implements pflag.Value.
func (r *Ref) Type() string { return "[NAMESPACE/]NAME" }

// Set implements pflag.Value.
func (r *Ref) Set(v string) error {
	*r.p = v
	return r.record(v, refRule(v))
}

// SplitRef is the one parse of NAME or NAMESPACE/NAME: the namespace
// (defNS for a bare NAME) and the name.
func SplitRef(v, defNS string) (ns, name string) {
	k := fluxobj.KeyOf(v, defNS)
	return k.Namespace, k.Name
}

func refRule(v string) error {
	ns, name := SplitRef(v, "")
	if strings.Contains(v, "/") {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("want NAME or NAMESPACE/NAME, e.g. flux-system/flux-system: namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("want NAME or NAMESPACE/NAME, e.g. flux-system/flux-system: name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Text is a string flag with a rule (a namespace, a name, a Git URL): the
// value is shown quoted, with any URL credential redacted.
type Text struct {
	checked
	p        *string
	typ      string
	optional bool
	rule     func(string) error
}

func (t *Text) String() string { return *t.p }

// Type implements pflag.Value.
func (t *Text) Type() string { return t.typ }

// Set implements pflag.Value.
func (t *Text) Set(v string) error {
	*t.p = v
	if v == "" && t.optional {
		return t.record(v, nil)
	}
	return t.record(fmt.Sprintf("%q", RedactURLs(v)), t.rule(v))
}

// NewRuled parses into *p a value whose rule lives with its domain (a
// listen address: internal/serve); typ names the value in the help, and ""
// means none.
func NewRuled(p *string, typ string, rule func(string) error) *Text {
	return &Text{p: p, typ: typ, optional: true, rule: rule}
}

// NewNamespace sets *p to def and parses a namespace name into it.
func NewNamespace(p *string, def string) *Text {
	*p = def
	return &Text{p: p, typ: "NAMESPACE", rule: namespaceRule}
}

// NewOptionalName parses an object name into *p ("" means none); what
// names the object for the fix.
func NewOptionalName(p *string, what string) *Text {
	return &Text{p: p, typ: "NAME", optional: true, rule: func(v string) error { return nameRule(v, what) }}
}

// NewClusterDomain sets *p to def and parses a cluster DNS domain into it.
func NewClusterDomain(p *string, def string) *Text {
	*p = def
	return &Text{p: p, typ: "DOMAIN", rule: clusterDomainRule}
}

// NewRegistry sets *p to def and parses an image registry prefix into it.
func NewRegistry(p *string, def string) *Text {
	*p = def
	return &Text{p: p, typ: "REGISTRY", rule: registryRule}
}

// NewGitURL parses a Git URL into *p ("" means none).
func NewGitURL(p *string) *Text {
	return &Text{p: p, typ: "URL", optional: true, rule: gitURLRule}
}

// Keys are taint keys, comma-separated as pflag's string slices are;
// repeating the flag adds to them.
type Keys struct {
	checked
	p     *[]string
	inner pflag.Value
}

// NewTolerationKeys parses taint keys into *p.
func NewTolerationKeys(p *[]string) *Keys {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.StringSliceVar(p, "v", *p, "")
	return &Keys{p: p, inner: fs.Lookup("v").Value}
}

func (k *Keys) String() string {
	if len(*k.p) == 0 {
		return "" // no default shown in the help
	}
	return k.inner.String()
}

// Type implements pflag.Value.
func (k *Keys) Type() string { return "KEYS" }

// Set implements pflag.Value.
func (k *Keys) Set(v string) error {
	if err := k.inner.Set(v); err != nil {
		return k.record(fmt.Sprintf("%q", v), err)
	}
	for _, key := range *k.p {
		if err := tolerationKeyRule(key); err != nil {
			return k.record(fmt.Sprintf("%q", key), err)
		}
	}
	return k.record(v, nil)
}

// GetSlice implements pflag.SliceValue (a --config list).
func (k *Keys) GetSlice() []string { return k.inner.(pflag.SliceValue).GetSlice() }

// Append implements pflag.SliceValue.
func (k *Keys) Append(v string) error { return k.Set(v) }

// Replace implements pflag.SliceValue.
func (k *Keys) Replace(v []string) error {
	*k.p = nil
	return k.Set(strings.Join(v, ","))
}

var (
	_ pflag.Value = (*Duration)(nil)
	_ pflag.Value = (*Count)(nil)
	_ pflag.Value = (*OutputFile)(nil)
	_ pflag.Value = (*OutputDir)(nil)
	_ pflag.Value = (*Name)(nil)
	_ pflag.Value = (*Ref)(nil)
	_ pflag.Value = (*Text)(nil)

	_ pflag.SliceValue = (*Keys)(nil)
	_ pflag.SliceValue = (*RepoPaths)(nil)
)

// RepoPath is a path inside the repository (--repo): relative, with no
// ".." out of it, so it cannot name a directory elsewhere ("" is unset).
type RepoPath struct {
	checked
	p *string
}

// NewRepoPath parses into *p.
func NewRepoPath(p *string) *RepoPath { return &RepoPath{p: p} }

func (r *RepoPath) String() string { return *r.p }

// Type implements pflag.Value.
func (r *RepoPath) Type() string { return "PATH" }

// Set implements pflag.Value.
func (r *RepoPath) Set(v string) error {
	*r.p = v
	return r.record(v, repoPath(v))
}

func repoPath(v string) error {
	if v != "" && !filepath.IsLocal(v) {
		return fmt.Errorf("not a path inside the repository: name a directory relative to --repo, e.g. clusters/prod")
	}
	return nil
}

// RepoPaths is a comma-separated list of RepoPath; repeating the flag adds
// to it.
type RepoPaths struct {
	checked
	p   *[]string
	set bool
}

// NewRepoPaths parses into *p.
func NewRepoPaths(p *[]string) *RepoPaths { return &RepoPaths{p: p} }

func (r *RepoPaths) String() string { return "[" + strings.Join(*r.p, ",") + "]" }

// Type implements pflag.Value.
func (r *RepoPaths) Type() string { return "PATHS" }

// Set implements pflag.Value.
func (r *RepoPaths) Set(v string) error {
	if !r.set {
		*r.p, r.set = nil, true
	}
	for _, x := range strings.Split(v, ",") {
		*r.p = append(*r.p, x)
		if err := repoPath(x); err != nil && r.err == nil {
			r.record(x, err)
		}
	}
	return nil
}

// GetSlice implements pflag.SliceValue (a --config list).
func (r *RepoPaths) GetSlice() []string { return *r.p }

// Append implements pflag.SliceValue.
func (r *RepoPaths) Append(v string) error { return r.Set(v) }

// Replace implements pflag.SliceValue.
func (r *RepoPaths) Replace(v []string) error {
	r.set = false
	return r.Set(strings.Join(v, ","))
}

// Env is an environment's name: one directory under clusters/ ("" is unset).
type Env struct {
	checked
	p *string
}

// NewEnv parses into *p.
func NewEnv(p *string) *Env { return &Env{p: p} }

func (e *Env) String() string { return *e.p }

// Type implements pflag.Value.
func (e *Env) Type() string { return "ENV" }

// Set implements pflag.Value.
func (e *Env) Set(v string) error {
	*e.p = v
	if v != "" && (!filepath.IsLocal(v) || strings.ContainsAny(v, `/\`)) {
		return e.record(v, fmt.Errorf("not an environment name: name one directory of clusters/, e.g. dev"))
	}
	return e.record(v, nil)
}
