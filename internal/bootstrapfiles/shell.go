package bootstrapfiles

import (
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// unknownWord stands for a word whose value is not literal (a $VAR, a
// command substitution): never guessed at.
const unknownWord = "\x00"

// command reads one command (a shell script, as go-task runs it with
// mvdan.cc/sh) of a bootstrap step: the objects its kubectl creates.
// dir is the directory it runs in; how names the step.
func (r *reader) command(text string, at cmdAt, dir, how string) {
	f, err := syntax.NewParser().Parse(strings.NewReader(text), "")
	if err != nil {
		if strings.Contains(text, "kubectl") {
			r.notef("%s: %s at %s does not parse as shell (%v): not read", how, "a kubectl command", at.Location, err)
		}
		return
	}
	for _, st := range f.Stmts {
		r.stmt(st, at, dir, how)
	}
}

// stmt reads one statement: a pipeline, a list (&&, ||) or one command.
func (r *reader) stmt(st *syntax.Stmt, at cmdAt, dir, how string) {
	switch c := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			r.pipeline(flatten(st), at.at(st.Pos().Line()), dir, how)
			return
		}
		r.stmt(c.X, at, dir, how)
		r.stmt(c.Y, at, dir, how)
	case *syntax.CallExpr:
		r.pipeline([]*syntax.Stmt{st}, at.at(st.Pos().Line()), dir, how)
	default:
		// if/for/subshells: read only when they hold no kubectl.
		var kubectl bool
		syntax.Walk(st, func(n syntax.Node) bool {
			if l, ok := n.(*syntax.Lit); ok && path.Base(l.Value) == "kubectl" {
				kubectl = true
			}
			return !kubectl
		})
		if kubectl {
			r.notef("%s: a kubectl command inside shell control flow at %s: not read", how, at.at(st.Pos().Line()))
		}
	}
}

// flatten is the stages of a pipeline, in order.
func flatten(st *syntax.Stmt) []*syntax.Stmt {
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		return append(flatten(b.X), flatten(b.Y)...)
	}
	return []*syntax.Stmt{st}
}

// words are the literal words of a simple command (unknownWord for one
// that is not literal); nil for another kind of command. Leading
// assignments (FOO=bar cmd) are not words.
func words(st *syntax.Stmt) []string {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(c.Args))
	for _, w := range c.Args {
		out = append(out, literal(w))
	}
	return out
}

// literal is a word's value when it is written literally (quotes
// removed), else unknownWord.
func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return unknownWord
				}
				b.WriteString(l.Value)
			}
		default:
			return unknownWord
		}
	}
	return b.String()
}

// stdinFile is the file a statement's stdin is redirected from ("" none).
func stdinFile(st *syntax.Stmt) string {
	for _, rd := range st.Redirs {
		if rd.Op == syntax.RdrIn && rd.Word != nil {
			return literal(rd.Word)
		}
	}
	return ""
}

// program is a command's program name (kubectl for /usr/bin/kubectl).
func program(ws []string) string {
	if len(ws) == 0 {
		return ""
	}
	return path.Base(ws[0])
}

// pipeline reads one pipeline: what its last kubectl creates, and from
// what the stages before it feed it.
func (r *reader) pipeline(stages []*syntax.Stmt, at fluxrepo.Location, dir, how string) {
	last := stages[len(stages)-1]
	ws := words(last)
	if program(ws) != "kubectl" {
		for _, s := range stages {
			if program(words(s)) == "kubectl" {
				r.notef("%s: kubectl at %s is not the last stage of its pipeline (%s): not read", how, at, shape(stages))
				return
			}
		}
		return
	}
	k := parseKubectl(ws[1:])
	step := step{at: at, dir: dir, how: how, repo: r.repo}
	switch {
	case k.verb("apply"):
		r.apply(k, stages, last, step)
	case k.verb("create", "secret") || k.verb("create", "configmap"):
		// Its keys are in its flags, whatever feeds its stdin.
		r.create(k, step, "")
	}
}

// apply reads kubectl apply: -f FILE|DIR|URL, -k DIR, or -f - fed by the
// stage before it (sops --decrypt FILE, cat FILE, kubectl create … -o
// yaml, < FILE).
func (r *reader) apply(k kubectl, stages []*syntax.Stmt, last *syntax.Stmt, s step) {
	for _, dir := range k.values("--kustomize") {
		r.applyKustomize(k, dir, s)
	}
	for _, f := range k.values("--filename") {
		if f != "-" {
			r.applyFile(k, f, s, "kubectl apply -f "+s.shown(f))
			continue
		}
		if in := stdinFile(last); in != "" && len(stages) == 1 {
			r.applyFile(k, in, s, "kubectl apply -f - < "+s.shown(in))
			continue
		}
		if len(stages) < 2 {
			r.notef("%s: kubectl apply -f - at %s reads its stdin from the terminal: not read", s.how, s.at)
			continue
		}
		prev := words(stages[len(stages)-2])
		switch program(prev) {
		case "sops":
			if file, ok := sopsDecryptFile(prev[1:]); ok {
				r.applyFile(k, file, s, "sops --decrypt "+s.shown(file)+" | kubectl apply -f -")
				continue
			}
		case "cat":
			if len(prev) == 2 {
				r.applyFile(k, prev[1], s, "cat "+s.shown(prev[1])+" | kubectl apply -f -")
				continue
			}
		case "kubectl":
			pk := parseKubectl(prev[1:])
			if pk.verb("create", "secret") || pk.verb("create", "configmap") {
				r.create(pk, s, " | kubectl apply -f -")
				continue
			}
		}
		r.notef("%s: what reaches kubectl apply -f - at %s is not read (%s): the objects it creates are not known", s.how, s.at, shape(stages))
	}
}

// sopsDecryptFile is the file of `sops --decrypt [flags] FILE` (or -d).
func sopsDecryptFile(args []string) (string, bool) {
	decrypt := false
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" || a == "--decrypt" || a == "decrypt":
			decrypt = true
		case a == "--input-type" || a == "--output-type" || a == "--config" || a == "--extract":
			i++ // a flag with a value
		case strings.HasPrefix(a, "-"):
		default:
			files = append(files, a)
		}
	}
	if !decrypt || len(files) != 1 || files[0] == unknownWord {
		return "", false
	}
	return files[0], true
}

// shape is a pipeline as a note may show it: each stage's program and
// its verbs, never a flag's value (a value may be a secret).
func shape(stages []*syntax.Stmt) string {
	var parts []string
	for _, s := range stages {
		ws := words(s)
		if len(ws) == 0 {
			parts = append(parts, "…")
			continue
		}
		p := []string{program(ws)}
		for _, w := range ws[1:] {
			if w == unknownWord || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "=/") || len(p) > 3 {
				break
			}
			p = append(p, w)
		}
		parts = append(parts, strings.Join(p, " ")+" …")
	}
	return strings.Join(parts, " | ")
}

// step is one bootstrap command being read.
type step struct {
	at  fluxrepo.Location
	dir string
	how string
	// repo is the repository, to show paths relative to it.
	repo string
}

// shown is a path of the command as a report shows it (relative to the
// repository when inside it).
func (s step) shown(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.dir, p)
	}
	if s.repo != "" {
		if rel, err := filepath.Rel(s.repo, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(p)
}

// abs is a path of the command made absolute (relative to its directory).
func (s step) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.dir, p)
}
