package converge

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// NodeVerdict is a node's gate verdict and a short label (state, duration).
type NodeVerdict struct {
	Verdict verify.Verdict
	Label   string
}

// WriteGraphFile writes the graph with verdicts to path: Mermaid for .md
// (in a ```mermaid fence) and .mmd, DOT for .dot and .gv.
func WriteGraphFile(path string, g *fluxgraph.Graph, v map[NodeID]NodeVerdict) error {
	var write func(io.Writer, *fluxgraph.Graph, map[NodeID]NodeVerdict) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md":
		write = func(w io.Writer, g *fluxgraph.Graph, v map[NodeID]NodeVerdict) error {
			if _, err := io.WriteString(w, "```mermaid\n"); err != nil {
				return err
			}
			if err := WriteMermaid(w, g, v); err != nil {
				return err
			}
			_, err := io.WriteString(w, "```\n")
			return err
		}
	case ".mmd":
		write = WriteMermaid
	case ".dot", ".gv":
		write = WriteDOT
	default:
		return fmt.Errorf("unknown graph format %q: name the file .md or .mmd (Mermaid) or .dot (Graphviz)", filepath.Ext(path))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f, g, v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// GraphFormatOK says whether WriteGraphFile knows path's format.
func GraphFormatOK(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".mmd", ".dot", ".gv":
		return true
	}
	return false
}

var verdictColor = map[verify.Verdict]string{verify.Pass: "#c8e6c9", verify.Fail: "#ffcdd2", verify.Skip: "#e0e0e0", verify.Warn: "#fff9c4"}

// WriteMermaid writes a Mermaid flowchart: an arrow from each dependency to
// its dependent, a dotted one from a HelmRelease's applier to it, each node
// labelled with its verdict.
func WriteMermaid(w io.Writer, g *fluxgraph.Graph, v map[NodeID]NodeVerdict) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	idx := map[NodeID]string{}
	for i, id := range g.InOrder() {
		idx[id] = fmt.Sprintf("n%d", i)
	}
	for _, id := range g.InOrder() {
		nv := v[id]
		fmt.Fprintf(&b, "  %s[\"%s<br/>%s %s\"]:::%s\n", idx[id], id, verdictOr(nv.Verdict), nv.Label, verdictOr(nv.Verdict))
	}
	for _, id := range g.InOrder() {
		for _, d := range g.Nodes[id].DependsOn {
			if _, ok := idx[d]; ok {
				fmt.Fprintf(&b, "  %s --> %s\n", idx[d], idx[id])
			}
		}
		// A HelmRelease's applier orders it too: dotted, "applies".
		if by := g.Nodes[id].AppliedBy; id.IsHelmRelease() && idx[by] != "" {
			fmt.Fprintf(&b, "  %s -. applies .-> %s\n", idx[by], idx[id])
		}
	}
	for _, vd := range []verify.Verdict{verify.Pass, verify.Fail, verify.Skip, verify.Warn} {
		fmt.Fprintf(&b, "  classDef %s fill:%s\n", vd, verdictColor[vd])
	}
	fmt.Fprintf(&b, "  classDef unknown fill:#ffffff\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDOT writes a Graphviz digraph: an edge from each dependency to its
// dependent, each node labelled and filled by its verdict.
func WriteDOT(w io.Writer, g *fluxgraph.Graph, v map[NodeID]NodeVerdict) error {
	var b strings.Builder
	b.WriteString("digraph converge {\n  rankdir=LR;\n  node [shape=box, style=filled];\n")
	for _, id := range g.InOrder() {
		nv := v[id]
		color := verdictColor[nv.Verdict]
		if color == "" {
			color = "#ffffff"
		}
		fmt.Fprintf(&b, "  %q [label=%q, fillcolor=%q];\n", id.String(), id.String()+"\n"+verdictOr(nv.Verdict)+" "+nv.Label, color)
	}
	for _, id := range g.InOrder() {
		for _, d := range g.Nodes[id].DependsOn {
			fmt.Fprintf(&b, "  %q -> %q;\n", d.String(), id.String())
		}
		if by := g.Nodes[id].AppliedBy; id.IsHelmRelease() && g.Nodes[by] != nil {
			fmt.Fprintf(&b, "  %q -> %q [style=dashed, label=\"applies\"];\n", by.String(), id.String())
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func verdictOr(v verify.Verdict) string {
	if v == "" {
		return "unknown"
	}
	return string(v)
}
