package fluxrepo

import (
	"io/fs"
	"strings"
)

// maxGeneratorSource bounds the non-YAML files whose lines are indexed:
// kustomize generators read text files (dashboards, env files); a larger
// one is not located by line.
const maxGeneratorSource = 1 << 20

// generatorSource says whether d, a non-YAML file of the copy, is indexed
// for its lines: a regular file small enough to be a generator's source.
func generatorSource(d fs.DirEntry) bool {
	info, err := d.Info()
	return err == nil && info.Mode().IsRegular() && info.Size() <= maxGeneratorSource
}

// FileLines are the lines of file (relative, slash-separated) as the copy
// held them: every YAML file, and the other files containing "${" (a
// generator's sources). Nil when the file is not indexed.
func (e *Env) FileLines(file string) []string {
	if e.index == nil {
		return nil
	}
	e.index.load()
	return e.index.lines[file]
}

// Lines are the lines (1-based) of file, within the YAML document holding
// line (the whole file when it has no "---" separator), that contain text,
// unescaped as FindLine counts it: every place a defect found at file:line
// is written in that object.
func (e *Env) Lines(file string, line int, text string) []int {
	ls := e.FileLines(file)
	if len(ls) == 0 || text == "" {
		return nil
	}
	from, to := 0, len(ls)
	if line >= 1 && line <= len(ls) {
		for i := line - 1; i >= 0; i-- {
			if separator(ls[i]) && i != line-1 {
				from = i + 1
				break
			}
		}
		for i := line; i < len(ls); i++ {
			if separator(ls[i]) {
				to = i
				break
			}
		}
	}
	var out []int
	for i := from; i < to; i++ {
		if containsUnescaped(ls[i], text) {
			out = append(out, i+1)
		}
	}
	return out
}

// FindInObject is the first line containing text (unescaped, as FindLine
// counts it) of the object declared at decl: its own YAML document first —
// a multi-document file's later object is not located in an earlier one —
// then, as FindLine, decl's file and the other files.
func (e *Env) FindInObject(files []string, decl Location, text string) Location {
	if decl.File != "" && decl.Line > 0 {
		if ls := e.Lines(decl.File, decl.Line, text); len(ls) > 0 {
			return Location{File: decl.File, Line: ls[0]}
		}
	}
	return e.FindLine(files, decl.File, text)
}

// separator says whether l starts a new YAML document: "---" alone or
// followed by a comment ("--- # next").
func separator(l string) bool {
	t := strings.TrimRight(l, " \t\r")
	if t == "---" {
		return true
	}
	// YAML: a comment after the marker needs white space before its #.
	rest, ok := strings.CutPrefix(t, "---")
	return ok && (rest[0] == ' ' || rest[0] == '\t') && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "#")
}
