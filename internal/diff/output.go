package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// JSONSchema names the JSON document's layout (docs/diff.md "JSON"): a
// field is added within it, never renamed, removed or given another
// meaning; a change that would is a new schema name.
const JSONSchema = "bootstrap.diff/v1"

// jsonDoc is the JSON document: the schema, the verdicts the exit code is
// made of, then the result (base, head, clusters → kustomizations →
// objects {key, change, action, pruned, diff}, windows, notes).
type jsonDoc struct {
	Schema string `json:"schema"`
	// Changed: a cluster changes (--exit-code's 1).
	Changed bool `json:"changed"`
	// Failed: a Kustomization or a cluster's root fails at head (exit 1).
	Failed bool `json:"failed"`
	*Result
}

// WriteJSON writes the result as one JSON document (JSONSchema).
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a diff's "<redacted: …>" as it reads
	return enc.Encode(jsonDoc{Schema: JSONSchema, Changed: r.Changed(), Failed: r.Failed(), Result: r})
}

// WriteText writes the summary (one line per changed Kustomization, each
// window's steps), then every object's diff.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "diff %s → %s\n", r.Base, r.Head)
	if r.Base.Why != "" {
		fmt.Fprintf(&b, "  base: %s\n", r.Base.Why)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	for _, c := range r.Clusters {
		summary(&b, c)
	}
	for _, c := range r.Clusters {
		for _, k := range c.Kustomizations {
			if len(k.Objects) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n=== %s: Kustomization %s (%s)\n", c.Path, k.Ref, k.Change)
			for _, o := range k.Objects {
				fmt.Fprintf(&b, "* %s %s: %s\n", o.Key, o.Change, o.Action)
				b.WriteString(o.Diff)
				writeValues(&b, o)
			}
		}
		for _, wd := range c.Windows {
			if len(wd.Objects) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n=== %s: window, %s (%s as at base)\n", c.Path, wd.When(), wd.Object)
			for _, o := range wd.Objects {
				fmt.Fprintf(&b, "* %s: %s\n", o.Key, o.Action)
				b.WriteString(o.Diff)
			}
		}
		writeCharts(&b, c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func summary(b *strings.Builder, c *Cluster) {
	fmt.Fprintf(b, "\ncluster %s: %s", c.Path, c.Change)
	if c.Substitution != "" {
		fmt.Fprintf(b, " (substitution %s)", c.Substitution)
	}
	b.WriteString("\n")
	if c.Fail != "" {
		fmt.Fprintf(b, "  FAIL %s\n", c.Fail)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	for _, k := range c.Kustomizations {
		if k.Fail != "" {
			fmt.Fprintf(b, "  FAIL Kustomization %s (%s): %s\n", k.Ref, k.Change, k.Fail)
			continue
		}
		var counts []string
		for _, ch := range []string{Added, Removed, Changed, Upgraded} {
			n := 0
			for _, o := range k.Objects {
				if o.Change == ch {
					n++
				}
			}
			if n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", n, ch))
			}
		}
		what := strings.Join(counts, ", ")
		if what == "" {
			what = "nothing rendered here"
		}
		switch k.Change {
		case Added:
			what = "added wholesale: " + what
		case Removed:
			what = "removed wholesale: " + what
		}
		fmt.Fprintf(b, "  Kustomization %s (prune: %t): %s\n", k.Ref, k.Prune, what)
		if k.Note != "" {
			fmt.Fprintf(b, "    note: %s\n", k.Note)
		}
		for _, o := range k.Objects {
			fmt.Fprintf(b, "    %s %s: %s\n", sign(o.Change), o.Key, o.Action)
		}
	}
	for _, w := range c.Windows {
		for _, s := range w.Steps {
			fmt.Fprintf(b, "  WINDOW %s\n", s)
		}
	}
	for _, m := range c.Moves {
		fmt.Fprintf(b, "  MOVE %s\n", m.Step)
	}
}

func sign(change string) string {
	switch change {
	case Added:
		return "+"
	case Removed:
		return "-"
	}
	return "~"
}
