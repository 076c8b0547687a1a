package artifactgen

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	swapi "github.com/fluxcd/source-watcher/api/v2/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
)

var captureName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Requests are the artifacts g makes: its spec.artifacts as written, or,
// with spec.pathPattern ("@alias/apps/{app}"), one set per directory of
// that source the pattern matches, the captures (lower-cased in names)
// substituted into each artifact's name, from and to — source-watcher's
// buildArtifactRequests, with its errors.
func Requests(g *swapi.ArtifactGenerator, sources map[string]string) ([]swapi.OutputArtifact, error) {
	if g.Spec.PathPattern == "" {
		return g.Spec.OutputArtifacts, nil
	}
	pp := g.Spec.PathPattern
	head, pattern, ok := strings.Cut(pp, "/")
	if !ok || !strings.HasPrefix(head, "@") {
		return nil, fmt.Errorf("invalid pathPattern format: %s", pp)
	}
	alias := strings.TrimPrefix(head, "@")
	dir, ok := sources[alias]
	if !ok {
		return nil, fmt.Errorf("pathPattern %q: source alias %s not found in local sources", pp, alias)
	}
	if err := validateCaptures(pp, pattern); err != nil {
		return nil, err
	}
	re, err := regexp.Compile("^" + regexp.MustCompile(`\\\{([a-zA-Z0-9_]+)\\\}`).ReplaceAllString(regexp.QuoteMeta(pattern), `(?P<$1>[^/]+)`) + "$")
	if err != nil {
		return nil, fmt.Errorf("pathPattern %q: failed to compile path pattern: %w", pp, err)
	}
	names := re.SubexpNames()
	for _, n := range names[1:] {
		if errs := validation.IsQualifiedName(n); len(errs) > 0 {
			return nil, fmt.Errorf("pathPattern %q: capture variable %q is not a valid Kubernetes label key: %s", pp, n, strings.Join(errs, "; "))
		}
	}
	var out []swapi.OutputArtifact
	seen := map[string]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		m := re.FindStringSubmatch(rel)
		if m == nil {
			return nil
		}
		raw, lower := map[string]string{}, map[string]string{}
		for i, n := range names {
			if i > 0 && n != "" {
				raw[n], lower[n] = m[i], strings.ToLower(m[i])
			}
		}
		for k, v := range lower {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return fmt.Errorf("pathPattern %q: captured value %q for variable %q is not a valid Kubernetes label value: %s", pp, v, k, strings.Join(errs, "; "))
			}
		}
		for _, oa := range g.Spec.OutputArtifacts {
			r, err := render(oa, lower, raw)
			if err != nil {
				return fmt.Errorf("pathPattern %q: failed to render artifact %s for match %s: %w", pp, oa.Name, rel, err)
			}
			if errs := apivalidation.NameIsDNSSubdomain(r.Name, false); len(errs) > 0 {
				return fmt.Errorf("pathPattern %q: rendered artifact name %q is not a valid Kubernetes object name: %s", pp, r.Name, strings.Join(errs, "; "))
			}
			if prev, ok := seen[r.Name]; ok {
				return fmt.Errorf("pathPattern %q: directories %q and %q both resolve to artifact name %q", pp, prev, rel, r.Name)
			}
			seen[r.Name] = rel
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// validateCaptures refuses unbalanced braces and empty, malformed or
// repeated capture names.
func validateCaptures(pp, pattern string) error {
	seen := map[string]bool{}
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '{':
			end := strings.IndexByte(pattern[i+1:], '}')
			if end < 0 {
				return fmt.Errorf("pathPattern %q: invalid capture starting at offset %d: missing closing brace", pp, i)
			}
			n := pattern[i+1 : i+1+end]
			switch {
			case n == "":
				return fmt.Errorf("pathPattern %q: empty capture variable", pp)
			case !captureName.MatchString(n):
				return fmt.Errorf("pathPattern %q: capture variable %q must be a valid capture name matching [A-Za-z_][A-Za-z0-9_]*", pp, n)
			case seen[n]:
				return fmt.Errorf("pathPattern %q: duplicate capture variable %q", pp, n)
			}
			seen[n] = true
			i += end + 1
		case '}':
			return fmt.Errorf("pathPattern %q: invalid capture ending at offset %d: missing opening brace", pp, i)
		}
	}
	return nil
}

// render substitutes the captures: lower-cased ones into the name, raw
// ones into each copy's from and to.
func render(oa swapi.OutputArtifact, lower, raw map[string]string) (swapi.OutputArtifact, error) {
	name, err := template(oa.Name, lower)
	if err != nil {
		return oa, err
	}
	r := oa
	r.Name = name
	r.Copy = make([]swapi.CopyOperation, len(oa.Copy))
	for i, c := range oa.Copy {
		if c.From, err = template(c.From, raw); err != nil {
			return oa, err
		}
		if c.To, err = template(c.To, raw); err != nil {
			return oa, err
		}
		r.Copy[i] = c
	}
	return r, nil
}

func template(t string, data map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '{':
			end := strings.IndexByte(t[i+1:], '}')
			if end < 0 {
				return "", fmt.Errorf("invalid template %q: capture starting at offset %d is missing closing brace", t, i)
			}
			n := t[i+1 : i+1+end]
			if n == "" {
				return "", fmt.Errorf("invalid template %q: empty capture variable", t)
			}
			if !captureName.MatchString(n) {
				return "", fmt.Errorf("invalid template %q: capture variable %q must be a valid capture name matching [A-Za-z_][A-Za-z0-9_]*", t, n)
			}
			v, ok := data[n]
			if !ok {
				return "", fmt.Errorf("invalid template %q: capture variable %q is not defined by pathPattern", t, n)
			}
			b.WriteString(v)
			i += end + 1
		case '}':
			return "", fmt.Errorf("invalid template %q: capture ending at offset %d is missing opening brace", t, i)
		default:
			b.WriteByte(t[i])
		}
	}
	return b.String(), nil
}
