// Package input is the one home of this tool's input rules: what a user
// hands it on the command line, in --config, in the environment or as a
// file, checked before the first read of a repository or request to a
// cluster.
//
//   - value.go: the flag value types. Each checks its own value when it is
//     set, from whichever source; the parse itself never stops on a bad
//     value (the rest of the command line, -o json and --report-json,
//     still counts), and Check turns every recorded problem into one input
//     error (exit 2) naming the flags. Set and SetFromConfig set a flag
//     from the environment or a --config file through the same types and
//     name the variable or the file and key on a bad value.
//   - rules.go: the name rules (apimachinery's own validation functions),
//     Git URLs (the GitRepository CRD's pattern, no credentials), registry
//     prefixes, and the URL credential redaction every report goes through.
//   - read.go: bounded reads of the files a user points at: regular files
//     only, nothing outside the directory named, at most MaxFileSize bytes.
//
// Every failure is an input error (exit 2) that names the flag, file or
// variable, the rule and the fix, and never echoes a credential.
package input
