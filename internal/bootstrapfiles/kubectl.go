package bootstrapfiles

import (
	"os"
	"path"
	"strings"
)

// kubectl is one kubectl command line: its positional words (the verbs
// and names) and its flags by long name. A flag's value is kept only for
// the flags read here; --from-literal keeps its key, never its value.
type kubectl struct {
	args  []string
	flags map[string][]string
}

// kubectlShort are kubectl's one-letter flags read here, by long name.
var kubectlShort = map[string]string{"-n": "--namespace", "-f": "--filename", "-k": "--kustomize", "-o": "--output", "-l": "--selector", "-R": "--recursive", "-s": "--server"}

// kubectlValued are the kubectl flags (of apply and create, and the
// global ones) that take a value as the next word.
var kubectlValued = map[string]bool{
	"--namespace": true, "--filename": true, "--kustomize": true, "--output": true, "--selector": true, "--server": true,
	"--context": true, "--kubeconfig": true, "--cluster": true, "--user": true, "--token": true, "--as": true, "--as-group": true,
	"--from-file": true, "--from-literal": true, "--from-env-file": true, "--type": true, "--field-manager": true,
	"--timeout": true, "--prune-allowlist": true, "--cascade": true, "--grace-period": true, "--request-timeout": true,
	"--certificate-authority": true, "--client-certificate": true, "--client-key": true, "--cert": true, "--key": true,
	"--docker-server": true, "--docker-username": true, "--docker-password": true, "--docker-email": true,
	"--template": true, "--subresource": true,
}

// parseKubectl parses the words after kubectl as pflag does for the flags
// above: --flag value, --flag=value, -n value, -nvalue.
func parseKubectl(ws []string) kubectl {
	k := kubectl{flags: map[string][]string{}}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w == "--" {
			k.args = append(k.args, ws[i+1:]...)
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			k.args = append(k.args, w)
			continue
		}
		name, value, hasValue := strings.Cut(w, "=")
		if !strings.HasPrefix(name, "--") && len(name) > 2 {
			// -nflux-system
			name, value, hasValue = name[:2], w[2:], true
		}
		if long, ok := kubectlShort[name]; ok {
			name = long
		}
		if !hasValue && kubectlValued[name] && i+1 < len(ws) {
			i++
			value, hasValue = ws[i], true
		}
		if !hasValue {
			value = "true"
		}
		k.flags[name] = append(k.flags[name], value)
	}
	return k
}

// verb says the positional words begin with vs.
func (k kubectl) verb(vs ...string) bool {
	if len(k.args) < len(vs) {
		return false
	}
	for i, v := range vs {
		if k.args[i] != v {
			return false
		}
	}
	return true
}

// values are the values of the flag long.
func (k kubectl) values(long string) []string { return k.flags[long] }

// namespace is the -n/--namespace value ("" none).
func (k kubectl) namespace() string {
	ns := k.values("--namespace")
	if len(ns) == 0 || ns[len(ns)-1] == unknownWord {
		return ""
	}
	return ns[len(ns)-1]
}

// create reads kubectl create secret|configmap: the object its flags
// make, with the keys of --from-literal, --from-file and the secret
// types (never a value). suffix completes how it is applied.
func (r *reader) create(k kubectl, s step, suffix string) {
	kind, name, typ := "ConfigMap", "", ""
	switch {
	case k.verb("create", "secret") && len(k.args) >= 4:
		kind, typ, name = "Secret", k.args[2], k.args[3]
	case k.verb("create", "configmap") && len(k.args) >= 3:
		name = k.args[2]
	}
	if name == "" || name == unknownWord {
		r.notef("%s: kubectl create at %s names no object literally: not read", s.how, s.at)
		return
	}
	ns := k.namespace()
	if ns == "" {
		ns = "default"
	}
	o := Object{Kind: kind, Namespace: ns, Name: name, Location: s.at,
		How: s.how + ": kubectl create " + strings.ToLower(kind)}
	if typ != "" {
		o.How += " " + typ
	}
	o.How += " " + name + suffix
	switch typ {
	case "tls":
		o.Keys = []string{"tls.crt", "tls.key"}
	case "docker-registry":
		o.Keys = []string{".dockerconfigjson"}
	}
	for _, l := range k.values("--from-literal") {
		key, _, _ := strings.Cut(l, "=")
		if key == "" || strings.Contains(key, unknownWord) {
			o.Open = true
			continue
		}
		o.Keys = append(o.Keys, key)
	}
	for _, f := range k.values("--from-file") {
		key, file, named := strings.Cut(f, "=")
		if !named {
			// The file's base name; a directory gives one key per file.
			key = path.Base(file)
			if st, err := os.Stat(s.abs(file)); file == unknownWord || (err == nil && st.IsDir()) {
				o.Open = true
				continue
			}
		}
		if key == "" || strings.Contains(key, unknownWord) {
			o.Open = true
			continue
		}
		o.Keys = append(o.Keys, key)
	}
	if len(k.values("--from-env-file")) > 0 {
		o.Open = true // its keys are in a file this read does not open
	}
	r.addObject(o)
}
