package bootstrapfiles

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	task "github.com/go-task/task/v3"
	"github.com/go-task/task/v3/taskfile"
	"github.com/go-task/task/v3/taskfile/ast"
	"go.yaml.in/yaml/v3"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// maxCallDepth bounds how deep task calls (cmds' task:, deps) are followed.
const maxCallDepth = 8

// taskfile reads the repository's root Taskfile with go-task's own reader
// (task.Executor.Setup: taskfile.Reader resolves includes, the graph is
// merged with namespaces) and compiles each bootstrap task with go-task's
// templater and variables (FastCompiledTask: dynamic `sh:` variables are
// never run, so a command using one resolves without it and its path is
// then not found: a note). ROOT_DIR is the repository.
func (r *reader) taskfile() {
	entry := ""
	// The names go-task looks for, in its order; only at the repository
	// root (go-task would walk up the parents: outside the repository).
	for _, n := range taskfile.DefaultTaskfiles {
		p := filepath.Join(r.repo, n)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			entry = p
			break
		}
	}
	if entry == "" {
		return
	}
	rel, _ := r.rel(entry)
	r.b.Files = append(r.b.Files, rel)
	if err := safeio.CheckFile(entry, rel); err != nil {
		r.notef("%s not read: %v", rel, err)
		return
	}
	e := task.NewExecutor(task.WithDir(r.repo), task.WithEntrypoint(entry), task.WithOffline(true),
		task.WithTimeout(5*time.Second), task.WithStdin(strings.NewReader("")),
		task.WithStdout(io.Discard), task.WithStderr(io.Discard), task.WithVersionCheck(false), task.WithSilent(true))
	e.UserWorkingDir = r.repo
	if err := e.Setup(); err != nil {
		r.notef("%s: go-task does not read it: %v", rel, err)
		return
	}
	tr := &taskReader{reader: r, e: e, lines: map[string]*yaml.Node{}, seen: map[string]bool{}}
	for name, t := range e.Taskfile.Tasks.All(nil) {
		if isBootstrapTask(name) {
			for _, f := range tr.files(t) {
				r.b.Files = append(r.b.Files, f)
			}
			tr.task(name, nil, 0)
		}
	}
}

// isBootstrapTask says a task is part of the bootstrap: a segment of its
// namespaced name mentions bootstrap (flux:bootstrap, bootstrap:apps).
func isBootstrapTask(name string) bool {
	for _, s := range strings.Split(name, ":") {
		if strings.Contains(strings.ToLower(s), "bootstrap") {
			return true
		}
	}
	return false
}

// taskReader walks the bootstrap tasks and the tasks they call.
type taskReader struct {
	*reader
	e     *task.Executor
	lines map[string]*yaml.Node // parsed Taskfiles, by path
	seen  map[string]bool
}

func (tr *taskReader) files(t *ast.Task) []string {
	if t.Location == nil {
		return nil
	}
	if rel, ok := tr.rel(t.Location.Taskfile); ok {
		return []string{rel}
	}
	return nil
}

// task reads the commands of task name, compiled with vars (a caller's).
func (tr *taskReader) task(name string, vars *ast.Vars, depth int) {
	if tr.seen[name] || depth > maxCallDepth {
		return
	}
	tr.seen[name] = true
	orig, err := tr.e.GetTask(&task.Call{Task: name})
	if err != nil {
		tr.notef("Taskfile task %s: %v", name, err)
		return
	}
	c, err := tr.e.FastCompiledTask(&task.Call{Task: name, Vars: vars})
	if err != nil {
		tr.notef("Taskfile task %s does not compile: %v", name, err)
		return
	}
	for _, d := range c.Deps {
		if d != nil && d.Task != "" {
			tr.task(d.Task, d.Vars, depth+1)
		}
	}
	nodes := tr.cmdNodes(orig)
	at := 0
	for i, o := range orig.Cmds {
		if o == nil {
			continue
		}
		loc := tr.cmdLocation(orig, nodes, i)
		n := 1
		if o.For != nil {
			n = 0
			for at+n < len(c.Cmds) && c.Cmds[at+n].For != nil && reflect.DeepEqual(c.Cmds[at+n].For, o.For) {
				n++
			}
		}
		for ; n > 0 && at < len(c.Cmds); n-- {
			cmd := c.Cmds[at]
			at++
			switch {
			case cmd.Defer:
				// Runs after the task, whatever happened: clean-up.
			case cmd.Task != "":
				tr.task(cmd.Task, cmd.Vars, depth+1)
			default:
				tr.command(cmd.Cmd, loc, c.Dir, "Taskfile task "+name)
			}
		}
	}
}

// cmdNodes are the YAML nodes of t's commands in its Taskfile (nil when
// the file or the task is not found there).
func (tr *taskReader) cmdNodes(t *ast.Task) []*yaml.Node {
	if t.Location == nil {
		return nil
	}
	doc, ok := tr.lines[t.Location.Taskfile]
	if !ok {
		doc = nil
		if b, err := safeio.ReadFile(t.Location.Taskfile, t.Location.Taskfile); err == nil {
			var n yaml.Node
			if yaml.Unmarshal(b, &n) == nil && len(n.Content) > 0 {
				doc = n.Content[0]
			}
		}
		tr.lines[t.Location.Taskfile] = doc
	}
	tasks := mapValue(doc, "tasks")
	if tasks == nil || tasks.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(tasks.Content); i += 2 {
		if tasks.Content[i].Line != t.Location.Line {
			continue
		}
		v := tasks.Content[i+1]
		switch v.Kind {
		case yaml.ScalarNode:
			return []*yaml.Node{v}
		case yaml.SequenceNode:
			return v.Content
		case yaml.MappingNode:
			if cmds := mapValue(v, "cmds"); cmds != nil && cmds.Kind == yaml.SequenceNode {
				return cmds.Content
			}
		}
	}
	return nil
}

// cmdLocation is the line of command i of t (the task's line when not
// found): a command written as a mapping is located at its cmd: value.
func (tr *taskReader) cmdLocation(t *ast.Task, nodes []*yaml.Node, i int) cmdAt {
	loc := cmdAt{}
	if t.Location != nil {
		loc.File, _ = tr.rel(t.Location.Taskfile)
		loc.Line = t.Location.Line
	}
	if i < len(nodes) {
		n := nodes[i]
		if n.Kind == yaml.MappingNode {
			if c := mapValue(n, "cmd"); c != nil {
				n = c
			}
		}
		loc.Line = n.Line
		// A block scalar's text begins on the next line.
		loc.block = n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	}
	return loc
}

// cmdAt is where a command is written.
type cmdAt struct {
	fluxrepo.Location
	block bool
}

// at is the location of the command's line n (1-based) of its text.
func (c cmdAt) at(n uint) fluxrepo.Location {
	l := c.Location
	if c.block {
		l.Line += int(n)
	}
	return l
}

// mapValue is the value of key in mapping n (nil when absent).
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// short is a command cut for a note: the first line, bounded.
func short(cmd string) string {
	cmd, _, more := strings.Cut(strings.TrimSpace(cmd), "\n")
	if len(cmd) > 120 {
		cmd, more = cmd[:120], true
	}
	if more {
		cmd += " …"
	}
	return fmt.Sprintf("%q", cmd)
}
