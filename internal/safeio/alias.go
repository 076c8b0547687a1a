package safeio

import (
	"bytes"
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"
)

// An alias bomb ("billion laughs") is a YAML document whose aliases expand
// it a billion-fold. kustomize expands every alias of every manifest it
// reads, in memory, with no limit (kyaml's RNode.DeAnchor, called by
// kio.ByteReader with AnchorsAweigh, and by the controller's generator
// through resource.Factory.SliceFromBytes): one such document exhausts
// the memory of this tool and of kustomize-controller alike. The YAML
// decoders of the Kubernetes libraries refuse it: go.yaml.in/yaml/v3
// (decode.go, decoder.unmarshal and allowedAliasRatio) and the yaml.v2
// fork sigs.k8s.io/yaml reads with fail "document contains excessive
// aliasing" when alias expansion is more of the decoded nodes than the
// ratio they allow (99% up to 400,000 nodes, falling to 10% at 4,000,000).
//
// AliasBomb applies that rule to every document of b before anything
// expands it: the yaml.Node tree keeps an alias as one node pointing to its
// anchor, so the expanded size is counted, not built. It returns where the
// first refused document's largest alias is and why ("" when none is).
// Bytes that are not YAML are left to the reader that parses them.
func AliasBomb(b []byte) (line int, why string) {
	if !mayAlias(b) {
		return 0, ""
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return 0, "" // the end, or not YAML: the build that reads it says so
		}
		c := aliasCounter{size: map[*yaml.Node]int64{}, open: map[*yaml.Node]bool{}}
		total := c.count(&doc)
		switch {
		case c.cycle != nil:
			return c.cycle.Line, fmt.Sprintf("the alias *%s is inside its own anchor &%s: expanding it never ends", c.cycle.Value, c.cycle.Value)
		case excessiveAliasing(total, c.aliased):
			return c.worst.Line, fmt.Sprintf("its aliases expand the document to %s nodes, %s of them copies made by aliases (the alias *%s alone: %s): more than the YAML decoders of Kubernetes accept (excessive aliasing)",
				count(total), count(c.aliased), c.worst.Value, count(c.worstSize))
		}
	}
}

// excessiveAliasing is go.yaml.in/yaml/v3's rule (decode.go,
// decoder.unmarshal), for a document of total decoded nodes of which
// aliased come from alias expansion.
func excessiveAliasing(total, aliased int64) bool {
	return aliased > 100 && total > 1000 && float64(aliased)/float64(total) > allowedAliasRatio(total)
}

// allowedAliasRatio is go.yaml.in/yaml/v3's allowedAliasRatio (decode.go).
func allowedAliasRatio(n int64) float64 {
	const low, high = 400000, 4000000
	switch {
	case n <= low:
		return 0.99
	case n >= high:
		return 0.10
	}
	return 0.99 - 0.89*(float64(n-low)/float64(high-low))
}

// mayAlias says whether b may hold an alias: an anchor (&name) and an
// alias (*name) where a YAML node may begin, so JSON and plain manifests
// (an & in a URL, a '*' in a quoted glob) are not decoded twice.
func mayAlias(b []byte) bool {
	return hasNodeProperty(b, '&') && hasNodeProperty(b, '*')
}

func hasNodeProperty(b []byte, c byte) bool {
	for i := bytes.IndexByte(b, c); i >= 0; {
		if i+1 < len(b) && !isSpace(b[i+1]) && (i == 0 || isSpace(b[i-1]) || bytes.IndexByte([]byte("[{,:-"), b[i-1]) >= 0) {
			return true
		}
		j := bytes.IndexByte(b[i+1:], c)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// aliasCounter counts the nodes a decoder visits in a document, aliases
// expanded, as go.yaml.in/yaml/v3's decoder counts them (one per node, an
// alias node and then every node of its anchor), without expanding.
type aliasCounter struct {
	size map[*yaml.Node]int64
	open map[*yaml.Node]bool
	// aliased: the nodes visited through an alias (the decoder's
	// aliasCount); worst is the alias that expands most, worstSize its size.
	aliased, worstSize int64
	worst              *yaml.Node
	// cycle is an alias inside its own anchor.
	cycle *yaml.Node
}

// count is the number of nodes decoding n visits; it adds the aliases
// met outside any alias to c.aliased.
func (c *aliasCounter) count(n *yaml.Node) int64 {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		s := c.sizeOf(n.Alias)
		c.aliased = add(c.aliased, s)
		if s > c.worstSize || c.worst == nil {
			c.worst, c.worstSize = n, s
		}
		return add(1, s)
	}
	total := int64(1)
	for _, ch := range n.Content {
		total = add(total, c.count(ch))
	}
	return total
}

// sizeOf is the number of nodes decoding n visits, aliases expanded,
// memoized: an anchor's size is counted once however often it is aliased.
func (c *aliasCounter) sizeOf(n *yaml.Node) int64 {
	if s, ok := c.size[n]; ok {
		return s
	}
	if c.open[n] {
		if c.cycle == nil {
			c.cycle = n
		}
		return 1
	}
	c.open[n] = true
	s := int64(1)
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil {
			if c.open[n.Alias] && c.cycle == nil {
				c.cycle = n
			}
			s = add(s, c.sizeOf(n.Alias))
		}
	} else {
		for _, ch := range n.Content {
			s = add(s, c.sizeOf(ch))
		}
	}
	delete(c.open, n)
	c.size[n] = s
	return s
}

// add is a+b, saturating: a bomb's size may pass any integer.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// count writes n for a person: 387,420,489.
func count(n int64) string {
	if n == math.MaxInt64 {
		return "more than 9 quintillion"
	}
	s := fmt.Sprint(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
