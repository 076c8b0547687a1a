package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// outputFormatsAnnotation names, on a command, the --output formats it
// writes besides text and json, comma-separated (diff: "markdown").
const outputFormatsAnnotation = "bootstrap/output-formats"

// outputFormats is what --output takes for cmd, for its error message.
func outputFormats(cmd *cobra.Command) string {
	fs := []string{"text", "json"}
	if more := cmd.Annotations[outputFormatsAnnotation]; more != "" {
		fs = append(fs, strings.Split(more, ",")...)
	}
	return strings.Join(fs[:len(fs)-1], ", ") + " or " + fs[len(fs)-1]
}
