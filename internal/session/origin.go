package session

import "fmt"

// Origin says where a flag's value came from when the command line did
// not set it: --versions-file, a BOOTSTRAP_<FLAG> variable, an alias.
type Origin struct {
	// Flag is the flag's name, without the dashes.
	Flag string
	// Value is the value it took.
	Value string
	// From names the origin, e.g. "FLUX_VERSION in versions.env" or
	// "BOOTSTRAP_FLUX_VERSION".
	From string
}

// String is the origin as every report's environment.N fact says it.
func (o Origin) String() string {
	return fmt.Sprintf("--%s %s (from %s)", o.Flag, o.Value, o.From)
}

// FlagOrigin says where flag's value came from: the Origin recorded for
// it, else the command line ("--flag").
func (s *Session) FlagOrigin(flag string) string {
	for _, o := range s.Origins {
		if o.Flag == flag {
			return o.From
		}
	}
	return "--" + flag
}
