package verify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Detector names a class of defect, e.g. "undefined": the rule ID of a
// finding in every report (text, JSON, SARIF).
type Detector string

// Finding is one located defect behind a check. The text report groups
// findings of one cause (Detector, Verdict and Cause) into one block,
// however many Kustomizations they affect; JSON keeps every one.
type Finding struct {
	// Detector names the class of defect, e.g. "undefined".
	Detector Detector `json:"detector"`
	// Verdict is the finding's own verdict (a policy may allow it: pass).
	Verdict Verdict `json:"verdict"`
	// File and Line locate it, relative to the repository.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Lines are every line of File where the defect is written, when it
	// is written more than once.
	Lines []int `json:"lines,omitempty"`
	// Count is how many times the defect occurs in its object, when more
	// than once.
	Count int `json:"count,omitempty"`
	// Message says what is wrong; Fix what to do about it.
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
	// Policy is the repository's rule that allowed or raised it, if any.
	Policy string `json:"policy,omitempty"`
	// Subject is the Kustomization (namespace/name) the defect affects.
	Subject string `json:"subject,omitempty"`
	// Cause names the defect several subjects share ("": the finding is
	// its own cause).
	Cause string `json:"cause,omitempty"`
	// Item tells findings of one cause apart (a variable of a component's
	// template defaults, each namespace's copy of a settings object).
	Item string `json:"item,omitempty"`
	// CauseFix is the one fix of the whole cause (a patch in the parent
	// reaching every affected child), when there is one.
	CauseFix string `json:"causeFix,omitempty"`
}

// Location is file:line (the file alone without a line; "" without a file).
func (f Finding) Location() string {
	switch {
	case f.File == "":
		return ""
	case f.Line == 0:
		return f.File
	}
	return f.File + ":" + strconv.Itoa(f.Line)
}

func (f *Finding) rewrite(w func(string) string) {
	f.Message, f.Fix, f.Policy = w(f.Message), w(f.Fix), w(f.Policy)
	f.Cause, f.Item, f.CauseFix = w(f.Cause), w(f.Item), w(f.CauseFix)
}

// group is the findings of one cause.
type group struct {
	key  string
	gate string // the ID of the first finding's check
	fs   []Finding
}

// groupFindings groups the findings that did not pass (policy-allowed
// ones pass), failures first, each in first-seen order.
func groupFindings(cs []Check) []*group { return groupBy(cs, Fail, Warn) }

// FindingGroup is the findings of one cause, as the text report writes
// them in one block: the first names the defect; Gate is the ID of their
// check (of their family when they are several checks').
type FindingGroup struct {
	Gate     string
	Findings []Finding
}

// GroupFindings groups the findings of cs as the text report does (per
// gate family, then detector, verdict and cause), failures first, then
// warnings, then the findings a policy allowed (which the text lists only
// in evidence), so every other format can say each defect once.
func GroupFindings(cs []Check) []FindingGroup {
	var out []FindingGroup
	for _, fam := range families(cs) {
		for _, g := range groupBy(fam.checks, Fail, Warn, Pass) {
			out = append(out, FindingGroup{Gate: g.gate, Findings: g.fs})
		}
	}
	// Failures of every family first, as the text's exit code reads.
	rank := map[Verdict]int{Fail: 0, Warn: 1, Pass: 2}
	slices.SortStableFunc(out, func(a, b FindingGroup) int { return rank[a.Findings[0].Verdict] - rank[b.Findings[0].Verdict] })
	return out
}

// Kustomizations are the subjects of the group's findings, each once.
func (g FindingGroup) Kustomizations() []string {
	var out []string
	for _, f := range g.Findings {
		if f.Subject != "" && !slices.Contains(out, f.Subject) {
			out = append(out, f.Subject)
		}
	}
	return out
}

// Summary is the group in one paragraph: the defect (its cause when the
// findings share one), how many Kustomizations it affects and the first
// few, its items, and the one fix.
func (g FindingGroup) Summary() string {
	f := g.Findings[0]
	if len(g.Findings) == 1 {
		s := f.Message
		if f.Fix != "" {
			s += " Fix: " + f.Fix
		}
		return s
	}
	var b strings.Builder
	(&group{fs: g.Findings}).write(&b)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	// Without the text's verdict and detector column.
	lines[0] = strings.TrimSpace(strings.TrimPrefix(lines[0], strings.ToUpper(string(f.Verdict))))
	lines[0] = strings.TrimSpace(strings.TrimPrefix(lines[0], "["+string(f.Detector)+"]"))
	s := strings.Join(lines, "; ")
	// The other places are the result's own (related locations).
	return strings.NewReplacer("; --verbose lists each", "", " (--verbose lists each)", "").Replace(s)
}

// groupBy groups the findings of cs with verdicts vs, in that order.
func groupBy(cs []Check, vs ...Verdict) []*group {
	var out []*group
	idx := map[string]*group{}
	for _, v := range vs {
		for _, c := range cs {
			for _, f := range c.Findings {
				if f.Verdict != v {
					continue
				}
				key := strings.Join([]string{string(f.Detector), string(f.Verdict), f.Cause}, "\x00")
				if f.Cause == "" {
					key += "\x00" + f.Location() + "\x00" + f.Message
				}
				g := idx[key]
				if g == nil {
					g = &group{key: key, gate: c.ID}
					idx[key] = g
					out = append(out, g)
				}
				if g.gate != c.ID {
					g.gate, _, _ = strings.Cut(g.gate, "/") // several checks: their family
				}
				g.fs = append(g.fs, f)
			}
		}
	}
	return out
}

// maxNamed is how many affected Kustomizations (or items) a block names.
const maxNamed = 3

// write writes the group as one block: the defect, where it is written,
// how many Kustomizations it affects (the first few by name) and one fix.
func (g *group) write(b *strings.Builder) {
	f := g.fs[0]
	var subjects []string
	seen := map[string]bool{}
	locs := map[string]bool{}
	for _, x := range g.fs {
		if x.Subject != "" && !seen[x.Subject] {
			seen[x.Subject] = true
			subjects = append(subjects, x.Subject)
		}
		locs[x.Location()] = true
	}
	head := fmt.Sprintf("      %-4s  [%s] ", strings.ToUpper(string(f.Verdict)), f.Detector)
	if len(g.fs) == 1 {
		if l := f.Location(); l != "" {
			head += l + ": "
		}
		fmt.Fprintf(b, "%s%s\n", head, f.Message)
		if f.Count > 1 || len(f.Lines) > 1 {
			fmt.Fprintf(b, "            %s\n", occurrences(f))
		}
		writeFix(b, f.Fix)
		return
	}
	cause := f.Cause
	if cause == "" {
		cause = f.Message
	}
	switch {
	case len(subjects) > 0:
		fmt.Fprintf(b, "%s%s — %d Kustomization(s): %s\n", head, cause, len(subjects), named(subjects))
	default:
		fmt.Fprintf(b, "%s%s — %d finding(s)\n", head, cause, len(g.fs))
	}
	// The items, each with how many Kustomizations it affects.
	var items []string
	per := map[string]map[string]bool{}
	for _, x := range g.fs {
		if x.Item == "" {
			continue
		}
		if per[x.Item] == nil {
			per[x.Item] = map[string]bool{}
			items = append(items, x.Item)
		}
		per[x.Item][x.Subject] = true
	}
	switch {
	case len(items) > 0 && len(items) <= 2*maxNamed:
		for _, it := range items {
			if n := len(per[it]); n > 1 || !per[it][""] {
				fmt.Fprintf(b, "            %s: %d Kustomization(s)\n", it, n)
				continue
			}
			fmt.Fprintf(b, "            %s\n", it) // an item that names what it affects
		}
	case len(items) > 0:
		fmt.Fprintf(b, "            %d distinct: %s\n", len(items), named(items))
	}
	at := "at " + f.Location()
	if f.Location() == "" {
		at = "first: " + f.Message
	}
	if n := len(locs) - 1; n > 0 {
		at += fmt.Sprintf(" (and %d other place(s); --verbose lists each)", n)
	} else if f.Count > 1 || len(f.Lines) > 1 {
		at += " (" + occurrences(f) + ")"
	}
	fmt.Fprintf(b, "            %s\n", at)
	fix := f.CauseFix
	if fix == "" {
		// No fix for the cause: the findings' own, when they agree (the
		// first one's would name only its Kustomization).
		fix = f.Fix
		for _, x := range g.fs {
			if x.Fix != f.Fix {
				fix = "one per Kustomization (--verbose lists each)"
				break
			}
		}
	}
	writeFix(b, fix)
}

func writeFix(b *strings.Builder, fix string) {
	if fix != "" {
		fmt.Fprintf(b, "            fix: %s\n", fix)
	}
}

// occurrences says how often, and on which lines, a finding occurs.
func occurrences(f Finding) string {
	n := max(f.Count, 1)
	s := fmt.Sprintf("%d occurrence(s)", n)
	if len(f.Lines) > 0 {
		ls := make([]string, len(f.Lines))
		for i, l := range f.Lines {
			ls[i] = strconv.Itoa(l)
		}
		s += " on line(s) " + strings.Join(ls, ", ")
	}
	return s
}

// named is the first few of names, and how many more.
func named(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}
