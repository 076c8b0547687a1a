package diff

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
)

// objReads are the objects both revisions' renders read (toUnstructured),
// by the object's content: one the same at both revisions after
// substitution (most of a Kustomization a knob or one file changes) is
// read once. What toUnstructured returns is a function of the object's
// YAML node tree (kyaml writes it as YAML, reads that back and writes it
// as JSON), so two objects whose trees are the same — kind, style, tag,
// value, anchor and comments of every node, in order; positions aside,
// which no value reads — read the same. The objects read are shared and
// never changed: the comparison and the values read them, the redactor
// copies them. nil: every object read anew.
type objReads struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*unstructured.Unstructured
}

func newObjReads() *objReads { return &objReads{m: map[[sha256.Size]byte]*unstructured.Unstructured{}} }

// read is toUnstructured(r), read once per content.
func (c *objReads) read(r *resource.Resource) (*unstructured.Unstructured, error) {
	if c == nil {
		return toUnstructured(r)
	}
	key := treeSum(r.YNode())
	c.mu.Lock()
	u, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return u, nil
	}
	u, err := toUnstructured(r)
	if err != nil {
		return nil, err // read again where met again: its words name the object
	}
	c.mu.Lock()
	c.m[key] = u
	c.mu.Unlock()
	return u, nil
}

// treeSum is a SHA-256 of n's tree: each node's kind, style, tag, value,
// anchor, comments and children, an alias by the tree it names.
func treeSum(n *yaml.Node) [sha256.Size]byte {
	h := sha256.New()
	sumNode(h, n, map[*yaml.Node]bool{})
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func sumNode(h hash.Hash, n *yaml.Node, open map[*yaml.Node]bool) {
	var b [binary.MaxVarintLen64]byte
	num := func(v int) { h.Write(b[:binary.PutUvarint(b[:], uint64(v))]) }
	str := func(s string) { num(len(s)); h.Write([]byte(s)) }
	if n == nil {
		num(0)
		return
	}
	num(int(n.Kind))
	num(int(n.Style))
	str(n.Tag)
	str(n.Value)
	str(n.Anchor)
	str(n.HeadComment)
	str(n.LineComment)
	str(n.FootComment)
	if n.Kind == yaml.AliasNode {
		if open[n.Alias] {
			num(-1) // a cycle: written once, marked
			return
		}
		open[n.Alias] = true
		sumNode(h, n.Alias, open)
		delete(open, n.Alias)
		return
	}
	num(len(n.Content))
	for _, c := range n.Content {
		sumNode(h, c, open)
	}
}
