package fluxrepo

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Documents are the YAML documents of file (relative, slash-separated) as
// the copy held it (FileLines), decoded once: their nodes say where each
// key and value is written (yaml.v3 Node.Line). Nil when the file is not
// indexed; a file that stops decoding keeps the documents before. The
// nodes are shared: callers only read them.
func (e *Env) Documents(file string) []*yaml.Node {
	if e.index == nil {
		return nil
	}
	return e.index.documents(file)
}

func (ix *fileIndex) documents(file string) []*yaml.Node {
	ix.load()
	ix.docsMu.Lock()
	defer ix.docsMu.Unlock()
	if docs, ok := ix.docs[file]; ok {
		return docs
	}
	var docs []*yaml.Node
	if ls := ix.lines[file]; len(ls) > 0 {
		dec := yaml.NewDecoder(strings.NewReader(strings.Join(ls, "\n")))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); err != nil {
				break
			}
			docs = append(docs, &doc)
		}
	}
	if ix.docs == nil {
		ix.docs = map[string][]*yaml.Node{}
	}
	ix.docs[file] = docs
	return docs
}
