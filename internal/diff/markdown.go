package diff

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
)

// CommentLimit is GitHub's limit on an issue or pull-request comment's
// body: 65,536 characters. The Markdown is kept under it (bytes, which
// are never fewer than characters).
const CommentLimit = 65536

// MarkdownMinLimit is the least MarkdownOptions.Limit taken: room for
// the summary of a small change and the notice saying what is cut.
const MarkdownMinLimit = 2048

// commentMargin is left free under the limit for what a comment step
// adds around the body (a sticky comment's header, a footer).
const commentMargin = 1024

// MarkdownMarker opens every Markdown document: a hidden HTML comment a
// comment step can find to update its previous comment, carrying what the
// diff says (changed=true|false failed=true|false windows=N) for a script.
const MarkdownMarker = "<!-- bootstrap-diff"

// MarkdownOptions shape the Markdown.
type MarkdownOptions struct {
	// Limit is the most bytes the document may have (0: CommentLimit less
	// a margin for a comment step's own header and footer).
	Limit int
}

// WriteMarkdown writes the result as a pull-request comment: a marker, the
// window's steps first (the incident class), a summary table (one row per
// cluster and Kustomization), then each Kustomization's diff and each
// window's render in a collapsible block. Over the limit, the largest
// diffs are cut first (to a common length, at a line) and the comment
// says which, and how to see them whole.
func WriteMarkdown(w io.Writer, r *Result, o MarkdownOptions) error {
	limit := o.Limit
	if limit <= 0 {
		limit = CommentLimit - commentMargin
	}
	m := newMarkdown(r)
	doc := m.render(-1)
	if len(doc) > limit {
		// The largest cap at which the document fits (binary search: the
		// document grows with the cap, bar the truncation notice).
		lo, hi := 0, m.largest()
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if len(m.render(mid)) <= limit {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		doc = m.render(lo)
		if len(doc) > limit {
			// Too many sections for even their object lines: as many as
			// fit, in order, the rest counted; the summary alone, cut,
			// only when it is itself over the limit.
			doc = m.fill(limit)
		}
	}
	_, err := io.WriteString(w, doc)
	return err
}

// mdBlock is one diff a collapsible block shows: an object's, in a
// Kustomization or a window.
type mdBlock struct {
	id   string // what the truncation notice names: cluster, Kustomization, object
	line string // the object line above the fence
	diff string
}

// mdSection is one collapsible block: a Kustomization's or a window's.
type mdSection struct {
	summary string
	open    bool
	notes   []string
	blocks  []*mdBlock
}

type markdown struct {
	r        *Result
	head     string // marker, title, notes, window steps, table
	sections []*mdSection
	local    string // the command that shows every diff whole
}

func newMarkdown(r *Result) *markdown {
	m := &markdown{r: r}
	var b strings.Builder
	windows := 0
	for _, c := range r.Clusters {
		for _, wd := range c.Windows {
			windows += len(wd.Steps)
		}
	}
	fmt.Fprintf(&b, "%s changed=%t failed=%t windows=%d -->\n", MarkdownMarker, r.Changed(), r.Failed(), windows)
	fmt.Fprintf(&b, "### bootstrap diff: %s → %s\n\n", code(r.Base.String()), code(r.Head.String()))
	if r.Base.Why != "" {
		fmt.Fprintf(&b, "Base: %s.\n\n", mdText(r.Base.Why))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- note: %s\n", mdText(n))
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	if windows > 0 {
		b.WriteString("> [!WARNING]\n> **The window between the commits**: what a Kustomization applies if it reconciles before the one applying the knob it reads — for a reconcile, until the applier has applied it. `dependsOn` on the applier closes it.\n>\n")
		for _, c := range r.Clusters {
			for _, wd := range c.Windows {
				for _, s := range wd.Steps {
					fmt.Fprintf(&b, "> - **%s**: %s\n", mdText(c.Path), mdText(s))
				}
			}
		}
		b.WriteString("\n")
	}
	var moves []string
	for _, c := range r.Clusters {
		for _, mv := range c.Moves {
			moves = append(moves, fmt.Sprintf("> - **%s**: %s\n", mdText(c.Path), mdText(mv.Step)))
		}
	}
	if len(moves) > 0 {
		b.WriteString("> [!CAUTION]\n> **Objects that move between Kustomizations**: which Kustomization reconciles first decides whether the object survives.\n>\n")
		b.WriteString(strings.Join(moves, ""))
		b.WriteString("\n")
	}
	m.table(&b)
	for _, c := range m.r.Clusters {
		if c.Substitution != "" && c.Change != Unchanged {
			fmt.Fprintf(&b, "- %s: substitution %s\n", code(c.Path), mdText(c.Substitution))
		}
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- %s: note: %s\n", code(c.Path), mdText(n))
		}
	}
	if !strings.HasSuffix(b.String(), "\n\n") {
		b.WriteString("\n")
	}
	m.head = b.String()

	cmd := []string{"bootstrap diff"}
	if r.Base.Commit != "" {
		cmd = append(cmd, "--base "+r.Base.Commit)
	}
	if r.Head.Commit != "" {
		cmd = append(cmd, "--head "+r.Head.Commit)
	}
	m.local = strings.Join(cmd, " ")

	for _, c := range r.Clusters {
		for _, k := range c.Kustomizations {
			if len(k.Objects) == 0 && k.Fail == "" {
				continue
			}
			s := &mdSection{summary: fmt.Sprintf("%s: Kustomization %s (%s%s)", c.Path, k.Ref, k.Change, counts(k.Objects, ", "))}
			if k.Fail != "" {
				s.open = true
				s.notes = append(s.notes, "**FAIL**: it does not apply at head:\n\n"+fence("text", k.Fail))
			}
			if k.Note != "" {
				s.notes = append(s.notes, "note: "+mdText(k.Note))
			}
			for _, o := range k.Objects {
				s.blocks = append(s.blocks, &mdBlock{
					id:   fmt.Sprintf("%s: %s: %s", c.Path, k.Ref, o.Key),
					line: fmt.Sprintf("%s: %s", code(sign(o.Change)+" "+o.Key.String()), mdText(o.Action)),
					diff: o.Diff,
				})
			}
			m.sections = append(m.sections, s)
		}
		for _, wd := range c.Windows {
			if len(wd.Objects) == 0 && wd.Fail == "" {
				continue
			}
			s := &mdSection{open: true, summary: fmt.Sprintf("%s: WINDOW %s (%s as at base)", c.Path, wd.When(), wd.Object)}
			if wd.Fail != "" {
				s.notes = append(s.notes, "Kustomization "+code(wd.Reader)+" fails to build:\n\n"+fence("text", wd.Fail))
			}
			for _, o := range wd.Objects {
				s.blocks = append(s.blocks, &mdBlock{
					id:   fmt.Sprintf("%s: window of %s: %s", c.Path, wd.Reader, o.Key),
					line: fmt.Sprintf("%s: renders, against base: %s", code(o.Key.String()), mdText(o.Action)),
					diff: o.Diff,
				})
			}
			m.sections = append(m.sections, s)
		}
	}
	return m
}

// table writes the summary: one row per cluster and Kustomization that
// changes, fails or reads a knob in a window.
func (m *markdown) table(b *strings.Builder) {
	type row struct {
		cluster, ks         string
		add, change, remove int
		actions, fail       string
		window              int
	}
	var rows []row
	for _, c := range m.r.Clusters {
		byRef := map[string]*row{}
		var order []string
		if c.Fail != "" || (len(c.Kustomizations) == 0 && len(c.Windows) == 0) {
			r := row{cluster: c.Path, ks: "—", actions: c.Change}
			if c.Fail != "" {
				r.fail = "**FAIL** " + mdText(firstLine(c.Fail))
			}
			rows = append(rows, r)
		}
		for _, k := range c.Kustomizations {
			r := &row{cluster: c.Path, ks: k.Ref}
			for _, o := range k.Objects {
				switch o.Change {
				case Added:
					r.add++
				case Removed:
					r.remove++
				default:
					r.change++
				}
			}
			r.actions = actions(k.Objects)
			if k.Change != Changed {
				r.actions = strings.TrimPrefix(k.Change+" wholesale; "+r.actions, "; ")
				r.actions = strings.TrimSuffix(r.actions, "; ")
			}
			if k.Fail != "" {
				r.fail = "**FAIL**"
			}
			byRef[k.Ref] = r
			order = append(order, k.Ref)
		}
		for _, wd := range c.Windows {
			r := byRef[wd.Reader]
			if r == nil {
				r = &row{cluster: c.Path, ks: wd.Reader}
				byRef[wd.Reader] = r
				order = append(order, wd.Reader)
			}
			r.window += len(wd.Steps)
		}
		for _, ref := range order {
			rows = append(rows, *byRef[ref])
		}
	}
	if len(rows) == 0 {
		b.WriteString("No cluster root found to compare.\n")
		return
	}
	b.WriteString("| Cluster | Kustomization | Added | Changed | Removed | Controller actions | Window | Fails |\n")
	b.WriteString("|---|---|--:|--:|--:|---|---|---|\n")
	for _, r := range rows {
		window := ""
		if r.window > 0 {
			window = fmt.Sprintf("**⚠ %d step(s)**", r.window)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %s | %s | %s |\n", cell(r.cluster), cell(r.ks), r.add, r.change, r.remove, cell(r.actions), window, cell(r.fail))
	}
	b.WriteString("\n")
}

// actions counts what the controllers do, by kind of action, in the order
// of actionKinds ("Helm upgrade ×2, rollout").
func actions(objs []*Object) string {
	n := map[string]int{}
	for _, o := range objs {
		tagged := false
		for _, a := range actionKinds {
			if strings.Contains(o.Action, a.match) {
				n[a.name]++
				tagged = true
			}
		}
		if !tagged && o.Change != Removed {
			// Applied, nothing more.
			n[map[string]string{Added: "created", Changed: "updated"}[o.Change]]++
		}
	}
	var out []string
	for _, a := range append(actionKinds, struct{ name, match string }{"created", ""}, struct{ name, match string }{"updated", ""}) {
		if c := n[a.name]; c == 1 {
			out = append(out, a.name)
		} else if c > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", a.name, c))
		}
	}
	return strings.Join(out, ", ")
}

// actionKinds are the controller actions the table counts, matched in
// compare.go's action lines.
var actionKinds = []struct{ name, match string }{
	{"Helm install", "Helm install"},
	{"Helm upgrade", "Helm upgrade"},
	{"Helm uninstall", "Helm uninstall"},
	{"rollout", "rollout:"},
	{"CRD", "CRD "},
	{"Namespace deleted", "deletes everything in it"},
	{"pruned", "pruned:"},
	{"left on the cluster", "left on the cluster"},
}

// counts is ": 1 added, 2 changed" (sep between), "" for none.
func counts(objs []*Object, sep string) string {
	var out []string
	for _, ch := range []string{Added, Changed, Removed} {
		n := 0
		for _, o := range objs {
			if o.Change == ch {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, ch))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, sep)
}

// largest is the longest diff.
func (m *markdown) largest() int {
	n := 0
	for _, s := range m.sections {
		for _, b := range s.blocks {
			n = max(n, len(b.diff))
		}
	}
	return n
}

// render is the document with every diff cut to at most limit bytes (at a
// line; -1: whole).
func (m *markdown) render(limit int) string {
	var b strings.Builder
	var cut []string
	var body strings.Builder
	for _, s := range m.sections {
		cut = append(cut, s.write(&body, limit)...)
	}
	b.WriteString(m.head)
	if len(cut) > 0 {
		m.truncated(&b, cut)
	}
	b.WriteString(body.String())
	return b.String()
}

// write writes the collapsible block of s, its diffs cut to limit bytes
// (-1: whole), and returns the ids of those cut.
func (s *mdSection) write(body *strings.Builder, limit int) (cut []string) {
	open := ""
	if s.open {
		open = " open"
	}
	fmt.Fprintf(body, "<details%s><summary>%s</summary>\n\n", open, html.EscapeString(s.summary))
	for _, n := range s.notes {
		body.WriteString(strings.TrimRight(n, "\n") + "\n\n")
	}
	for _, bl := range s.blocks {
		d, shown, all := truncate(bl.diff, limit)
		body.WriteString(bl.line + "\n\n")
		if shown < all {
			cut = append(cut, bl.id)
			if shown == 0 {
				fmt.Fprintf(body, "_diff of %d lines not shown: the comment's size limit (see below)_\n\n", all)
				continue
			}
		}
		body.WriteString(fence("diff", d))
		if shown < all {
			fmt.Fprintf(body, "_… %d of %d lines shown: the comment's size limit (see below)_\n", shown, all)
		}
		body.WriteString("\n")
	}
	body.WriteString("</details>\n\n")
	return cut
}

// fill is the document when even every section's object lines exceed the
// room the summary leaves: the sections in order, each whole where it
// fits, else with its diffs left out, while there is room; the rest are
// counted, and the command that shows everything is given.
func (m *markdown) fill(limit int) string {
	if len(m.head) >= limit {
		return m.summaryOnly(limit)
	}
	// Room for the notices, counted at their largest.
	var cutAll []string
	for _, s := range m.sections {
		for _, bl := range s.blocks {
			cutAll = append(cutAll, bl.id)
		}
	}
	var probe strings.Builder
	m.truncated(&probe, cutAll)
	rest := fmt.Sprintf("> [!NOTE]\n> **%d more section(s) not shown**: the comment's size limit. Run %s in the repository to see everything.\n", len(m.sections), code(m.local))
	room := limit - len(m.head) - probe.Len() - len(rest)
	var body strings.Builder
	var cut []string
	shown := 0
	for _, s := range m.sections {
		var whole, lines strings.Builder
		wc := s.write(&whole, -1)
		lc := s.write(&lines, 0)
		switch {
		case body.Len()+whole.Len() <= room:
			body.WriteString(whole.String())
			cut = append(cut, wc...)
		case body.Len()+lines.Len() <= room:
			body.WriteString(lines.String())
			cut = append(cut, lc...)
		default:
			continue
		}
		shown++
	}
	var b strings.Builder
	b.WriteString(m.head)
	if len(cut) > 0 {
		m.truncated(&b, cut)
	}
	b.WriteString(body.String())
	if n := len(m.sections) - shown; n > 0 {
		fmt.Fprintf(&b, "> [!NOTE]\n> **%d more section(s) not shown**: the comment's size limit. Run %s in the repository to see everything.\n", n, code(m.local))
	}
	return b.String()
}

// maxCutNamed is how many cut diffs the notice names.
const maxCutNamed = 10

// truncated says which diffs are cut and how to see them.
func (m *markdown) truncated(b *strings.Builder, cut []string) {
	fmt.Fprintf(b, "> [!NOTE]\n> **%d diff(s) truncated** to keep this comment under GitHub's %d-character limit (the largest first). Run %s in the repository to see them whole:\n", len(cut), CommentLimit, code(m.local))
	sort.Strings(cut)
	// A list of every name would be a page of its own: the first ones.
	for _, c := range cut[:min(len(cut), maxCutNamed)] {
		fmt.Fprintf(b, "> - %s\n", mdText(c))
	}
	if len(cut) > maxCutNamed {
		fmt.Fprintf(b, "> - … and %d more\n", len(cut)-maxCutNamed)
	}
	b.WriteString("\n")
}

// summaryOnly is the head alone, cut to limit at a table row, saying so.
func (m *markdown) summaryOnly(limit int) string {
	note := fmt.Sprintf("\n> [!NOTE]\n> **Cut**: the summary alone exceeds GitHub's %d-character comment limit; no diff is shown. Run %s in the repository to see everything.\n", CommentLimit, code(m.local))
	head := m.head
	if len(head)+len(note) > limit {
		i := strings.LastIndex(head[:max(0, limit-len(note))], "\n")
		head = head[:i+1]
	}
	return head + note
}

// truncate cuts d to at most limit bytes at a line end (limit < 0: whole);
// it says how many lines it keeps of how many.
func truncate(d string, limit int) (string, int, int) {
	all := strings.Count(d, "\n")
	if !strings.HasSuffix(d, "\n") && d != "" {
		all++
	}
	if limit < 0 || len(d) <= limit {
		return d, all, all
	}
	i := strings.LastIndex(d[:limit], "\n")
	if i < 0 {
		return "", 0, all
	}
	kept := d[:i+1]
	return kept, strings.Count(kept, "\n"), all
}

// longestBackquotes is the longest run of backquotes in s.
func longestBackquotes(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// fence is content in a fenced code block whose fence is longer than any
// run of backquotes in it, so no content line closes it.
func fence(lang, content string) string {
	f := strings.Repeat("`", max(3, longestBackquotes(content)+1))
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return f + lang + "\n" + content + f + "\n"
}

// code is s as an inline code span that survives backquotes in s.
func code(s string) string {
	f := strings.Repeat("`", longestBackquotes(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return f + s + f
}

// mdText is a line of the engine's text as Markdown: its backquoted spans
// kept as code, the rest with HTML and Markdown's emphasis escaped, on one
// line. Unbalanced backquotes: all escaped.
func mdText(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", " ")
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 {
		return escapeText(s)
	}
	for i := range parts {
		if i%2 == 0 {
			parts[i] = escapeText(parts[i])
		}
	}
	return strings.Join(parts, "`")
}

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "\\", "\\\\")

func escapeText(s string) string { return textEscaper.Replace(s) }

// cell is a table cell: one line, pipes escaped (in code spans too:
// GitHub splits cells before it parses spans).
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "\\|")
}
