package input

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/safeio"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// sourceAnnotation marks a flag set from the environment: ambient, so not
// "given" for the rules about flags that have no effect (Given).
const sourceAnnotation = "bootstrap.input/source"

// Set sets the flag name of fl to value from outside the command line, from
// saying where (a variable, a file): a value the flag's type refuses is an
// input error naming from, the flag and the value, at once.
func Set(fl *pflag.FlagSet, name, value, from string) error {
	if err := fl.Set(name, value); err != nil {
		return verify.InputErrorf("%s: --%s %q: %v", from, name, RedactURLs(value), err)
	}
	f := fl.Lookup(name)
	if v, ok := f.Value.(interface {
		Err() error
		Raw() string
	}); ok && v.Err() != nil {
		return verify.InputErrorf("%s: --%s %s: %v", from, name, v.Raw(), v.Err())
	}
	return nil
}

// SetFromEnvironment is Set for a value from the environment: the flag is
// marked ambient (see Given).
func SetFromEnvironment(fl *pflag.FlagSet, name, value, from string) error {
	if err := Set(fl, name, value, from); err != nil {
		return err
	}
	return fl.SetAnnotation(name, sourceAnnotation, []string{"environment"})
}

// Given says whether the flag name was given for this run, on the command
// line or in --config; a value from the environment is ambient (it applies
// to every command) and does not count.
func Given(fl *pflag.FlagSet, name string) bool {
	f := fl.Lookup(name)
	return f != nil && f.Changed && len(f.Annotations[sourceAnnotation]) == 0
}

// MaxConfig bounds a --config file.
const MaxConfig = 1 << 20

// SetFromConfig sets every flag of fl the command line did not set from
// the YAML map of flag names to values in the file at path: a list only
// for a flag that takes a list, a scalar otherwise, each through the
// flag's own type. An unknown key, a value of the wrong shape or one the
// type refuses is an input error naming the file and the key.
func SetFromConfig(fl *pflag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	b, err := safeio.ReadFileMax(path, "--config "+path, MaxConfig)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return verify.InputErrorf("--config %s: not a YAML map of flag names to values: %v", path, err)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad key is the same on every run
	for _, name := range names {
		if err := setConfigKey(fl, path, name, m[name]); err != nil {
			return err
		}
	}
	return nil
}

func setConfigKey(fl *pflag.FlagSet, path, name string, v any) error {
	if name == "config" {
		return verify.InputErrorf("--config %s: %q cannot be set from a config file", path, name)
	}
	flag := fl.Lookup(name)
	if flag == nil {
		return verify.InputErrorf("--config %s: unknown flag %q (the keys are the flag names, e.g. env, flux-version, components-extra)", path, name)
	}
	if flag.Changed {
		return nil // the command line (or the environment) wins
	}
	_, isList := flag.Value.(pflag.SliceValue)
	want := "one " + flag.Value.Type() + " value, e.g. " + name + ": " + example(flag)
	if isList {
		want = "a list of " + flag.Value.Type() + " values or one comma-separated string"
	}
	var val string
	switch x := v.(type) {
	case []any:
		if !isList {
			return verify.InputErrorf("--config %s: %s: a list, but --%s takes %s", path, name, name, want)
		}
		parts := make([]string, len(x))
		for i, e := range x {
			if !scalar(e) {
				return verify.InputErrorf("--config %s: %s: item %d is not a plain value: --%s takes %s", path, name, i+1, name, want)
			}
			parts[i] = fmt.Sprint(e)
		}
		val = strings.Join(parts, ",")
	default:
		if !scalar(x) {
			return verify.InputErrorf("--config %s: %s: not a plain value: --%s takes %s", path, name, name, want)
		}
		val = fmt.Sprint(x)
	}
	return Set(fl, name, val, "--config "+path+": "+name)
}

func scalar(v any) bool {
	switch v.(type) {
	case string, bool, float64, int, int64:
		return true
	}
	return false
}

func example(f *pflag.Flag) string {
	if f.DefValue != "" {
		return f.DefValue
	}
	return "…"
}
