// Package agekey is phase 2 of a bring-up: the out-of-band SOPS age key.
// It parses an age identity without ever echoing it, finds the SOPS files
// an environment's Kustomizations decrypt with the Secret, proves the key
// is one of their recipients and test-decrypts them in-process, and installs
// or verifies the Secret that kustomize-controller reads.
//
// Key material stays in memory: it is never written to disk, put in the
// process environment, or included in an error, a log line or a report.
package agekey

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"filippo.io/age"

	"github.com/homelab-ops/bootstrap/internal/redact"
	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// secretKeyHRP starts every native age identity (the Bech32 human-readable
// part, upper-cased).
const secretKeyHRP = "AGE-SECRET-KEY-"

// Environment variables that sops users already have.
const (
	EnvKey     = "SOPS_AGE_KEY"
	EnvKeyFile = "SOPS_AGE_KEY_FILE"
)

// maxKeyInput bounds what is read as an identity file: a key file is a few
// hundred bytes; anything this large is the wrong file.
const maxKeyInput = 1 << 20

// Identity is one parsed age identity. Its secret form is unexported and
// is never printed: String and GoString show only the public recipient.
type Identity struct {
	// Recipient is the identity's public key (age1…), safe to print.
	Recipient string
	// Type is "X25519" or "hybrid (post-quantum)".
	Type string

	id     age.Identity
	secret string
}

// String shows the public half only.
func (i Identity) String() string { return "age identity for " + i.Recipient }

// GoString shows the public half only, also under %#v.
func (i Identity) GoString() string { return "agekey.Identity{Recipient: " + i.Recipient + "}" }

// Identities is a parsed identity file: one or more identities, in order.
type Identities struct {
	// Source names where they came from (a path, "stdin" or an environment
	// variable's name), never their content.
	Source string
	// Mode is the key file's permission bits when Source is a file.
	Mode fs.FileMode
	// FromFile says Source is a file path and Mode is meaningful.
	FromFile bool
	Keys     []Identity
}

// Recipients are the public keys, in input order.
func (ids *Identities) Recipients() []string {
	out := make([]string, 0, len(ids.Keys))
	for _, k := range ids.Keys {
		out = append(out, k.Recipient)
	}
	return out
}

// Has reports whether recipient belongs to one of the identities.
func (ids *Identities) Has(recipient string) bool {
	for _, k := range ids.Keys {
		if k.Recipient == strings.TrimSpace(recipient) {
			return true
		}
	}
	return false
}

// SameKeys reports whether both hold the same set of identities.
func (ids *Identities) SameKeys(o *Identities) bool {
	a, b := sortedSet(ids.Recipients()), sortedSet(o.Recipients())
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sortedSet(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// ageIdentities are the parsed identities for age and sops.
func (ids *Identities) ageIdentities() []age.Identity {
	out := make([]age.Identity, 0, len(ids.Keys))
	for _, k := range ids.Keys {
		out = append(out, k.id)
	}
	return out
}

// SecretData is the canonical identity file kustomize-controller imports:
// one comment with the public key and one identity line per key. The same
// keys always give the same bytes, so a re-run is "unchanged".
func (ids *Identities) SecretData() []byte {
	var b bytes.Buffer
	for _, k := range ids.Keys {
		fmt.Fprintf(&b, "# public key: %s\n%s\n", k.Recipient, k.secret)
	}
	return b.Bytes()
}

// Parse reads an age identity file. source names the input in errors
// (a path, "stdin", an environment variable); no error ever contains a line
// of the input. Empty lines and "#" comments are ignored, as age does.
func Parse(data []byte, source string) (*Identities, error) {
	ids := &Identities{Source: source}
	text := string(data)
	if strings.TrimSpace(text) == "" {
		return nil, verify.InputErrorf("age identity from %s is empty: pass the identity file age-keygen wrote (its private key line, under the `# public key:` comment)", source)
	}
	if !utf8.ValidString(text) {
		return nil, verify.InputErrorf("age identity from %s is not text (not valid UTF-8): pass the identity file age-keygen wrote, not an encrypted or binary file", source)
	}
	if strings.HasPrefix(strings.TrimSpace(text), "-----BEGIN AGE ENCRYPTED FILE-----") || strings.HasPrefix(text, "age-encryption.org/") {
		return nil, verify.InputErrorf("age identity from %s is an age-encrypted file (a passphrase-protected identity): decrypt it first and pipe the plain identity to --age-key-file -", source)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), maxKeyInput)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, err := parseLine(line)
		if err != nil {
			return nil, verify.InputErrorf("age identity from %s, line %d: %v", source, n, err)
		}
		ids.Keys = append(ids.Keys, id)
	}
	if err := sc.Err(); err != nil {
		return nil, verify.InputErrorf("age identity from %s: a line is too long to be an age identity: pass the identity file age-keygen wrote", source)
	}
	if len(ids.Keys) == 0 {
		return nil, verify.InputErrorf("age identity from %s holds only comments or blank lines: pass the identity file age-keygen wrote (its private key line, under the `# public key:` comment)", source)
	}
	return ids, nil
}

var (
	sshPrivate = regexp.MustCompile(`^-----BEGIN [A-Z ]*PRIVATE KEY-----`)
	sshPublic  = regexp.MustCompile(`^(ssh-ed25519|ssh-rsa|ecdsa-sha2-\S+|sk-\S+) `)
)

// parseLine parses one identity. Its errors describe the line's kind but
// never quote it.
func parseLine(line string) (Identity, error) {
	upper := strings.ToUpper(line)
	switch {
	case strings.HasPrefix(line, "age1"):
		return Identity{}, fmt.Errorf("this is an age public key (a recipient, age1…), not an identity: the Secret needs the private key: the line of the age-keygen file under its `# public key:` comment")
	case strings.HasPrefix(upper, "AGE-PLUGIN-"):
		return Identity{}, fmt.Errorf("unsupported identity type: an age plugin identity (AGE-PLUGIN-…) needs a plugin binary that kustomize-controller does not have: use a native X25519 identity from age-keygen")
	case sshPrivate.MatchString(line):
		return Identity{}, fmt.Errorf("unsupported identity type: an SSH or PEM private key; kustomize-controller imports only native age identities from the Secret: use an identity from age-keygen")
	case sshPublic.MatchString(line):
		return Identity{}, fmt.Errorf("unsupported identity type: an SSH public key, and not an identity at all: use an identity from age-keygen")
	case strings.HasPrefix(upper, secretKeyHRP+"PQ-1"):
		id, err := age.ParseHybridIdentity(strings.ToUpper(line))
		if err != nil {
			return Identity{}, fmt.Errorf("malformed post-quantum age identity (bad length, character or checksum: truncated or altered?): copy the whole private key line again")
		}
		return Identity{Recipient: id.Recipient().String(), Type: "hybrid (post-quantum)", id: id, secret: id.String()}, nil
	case strings.HasPrefix(upper, secretKeyHRP+"1"): // Bech32: HRP, then the separator 1
		id, err := age.ParseX25519Identity(strings.ToUpper(line))
		if err != nil {
			return Identity{}, fmt.Errorf("malformed age identity (bad length, character or checksum: truncated or altered?): copy the whole private key line again")
		}
		return Identity{Recipient: id.Recipient().String(), Type: "X25519", id: id, secret: id.String()}, nil
	case strings.HasPrefix(upper, secretKeyHRP):
		return Identity{}, fmt.Errorf("unsupported or malformed age identity (an age secret key of an unknown type): use an X25519 identity from age-keygen")
	}
	return Identity{}, fmt.Errorf("not an age identity: pass the identity file age-keygen wrote")
}

// Input says where the identity comes from: Flag is --age-key-file ("-" is
// stdin); without it the sops environment variables are read through
// Getenv. Nothing is ever taken from a flag value holding the key itself.
type Input struct {
	Flag   string
	Stdin  io.Reader
	Getenv func(string) string
	// Identities, when set, were read already: a command that refuses bad
	// input before its first request reads the key first.
	Identities *Identities
}

// Read resolves Input, reads and parses the identities. Precedence:
// --age-key-file, then SOPS_AGE_KEY, then SOPS_AGE_KEY_FILE.
func Read(in Input) (*Identities, error) {
	if in.Identities != nil {
		return in.Identities, nil
	}
	getenv := in.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	switch {
	case in.Flag == "-":
		if in.Stdin == nil {
			return nil, verify.InputErrorf("--age-key-file -: no standard input to read the identity from")
		}
		data, err := readLimited(in.Stdin)
		if err != nil {
			return nil, verify.InputErrorf("--age-key-file -: read stdin: %v", err)
		}
		return Parse(data, "stdin")
	case in.Flag != "":
		return readFile(in.Flag, "--age-key-file "+in.Flag)
	case getenv(EnvKey) != "":
		return Parse([]byte(getenv(EnvKey)), "$"+EnvKey)
	case getenv(EnvKeyFile) != "":
		p := getenv(EnvKeyFile)
		return readFile(p, "$"+EnvKeyFile+" ("+p+")")
	}
	return nil, verify.InputErrorf("no age identity given: pass --age-key-file PATH, or --age-key-file - with the key on stdin, or set %s or %s (never the key itself as a flag)", EnvKeyFile, EnvKey)
}

func readFile(path, label string) (*Identities, error) {
	// A device, a pipe or a directory is refused before it is opened.
	if err := safeio.CheckFileMax(path, label, maxKeyInput); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, verify.InputErrorf("%s: %v: pass the path of the age identity file", label, errNoContent(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, verify.InputErrorf("%s: %v", label, errNoContent(err))
	}
	if st.IsDir() {
		return nil, verify.InputErrorf("%s is a directory: pass the age identity file itself", label)
	}
	data, err := readLimited(f)
	if err != nil {
		return nil, verify.InputErrorf("%s: %v", label, err)
	}
	ids, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	ids.FromFile, ids.Mode = true, st.Mode().Perm()
	return ids, nil
}

// errNoContent strips an *fs.PathError to its operation and cause: the
// path is already in the message.
func errNoContent(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := safeio.ReadLimited(r, maxKeyInput)
	if err != nil {
		return nil, fmt.Errorf("%v: that is not an age identity file", err)
	}
	return data, nil
}

// Redact replaces anything that looks like an age identity
// (redact.AgeIdentities, the rule the report writer applies too). It is
// the last line of defence before text leaves the process; the code above
// never puts key material in messages in the first place.
func Redact(s string) string { return redact.AgeIdentities(s) }

// RedactReport applies Redact to every text of a report.
func RedactReport(r *verify.Report) { r.Rewrite(Redact) }
