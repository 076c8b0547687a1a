package check

import (
	"bufio"
	"io"
	"os"
	"strings"
)

// kustomizeNotice says whether line is one of kustomize's deprecation
// notices: kustomize (api v0.21, internal/target/kusttarget.go
// accumulateDirectory) prints types.Kustomization.CheckDeprecatedFields'
// messages ("# Warning: 'commonLabels' is deprecated. Please use 'labels'
// instead. Run 'kustomize edit fix' …") straight to os.Stderr at every build
// of a kustomization.yaml using such a field. kustomize-controller builds
// the same way and keeps building: no verdict, so not the report's.
func kustomizeNotice(line string) bool {
	return strings.HasPrefix(line, "# Warning: '") && strings.Contains(line, "' is deprecated.")
}

// FilterKustomizeNotices makes os.Stderr a pipe that forwards every line to
// dst but kustomize's deprecation notices (issue #45: they are not the
// report, and repeat per build). restore puts os.Stderr back and returns
// once every line written before it is forwarded. A pipe that cannot be
// made leaves os.Stderr as it is.
func FilterKustomizeNotices(dst io.Writer) (restore func()) {
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" && !kustomizeNotice(line) {
				_, _ = io.WriteString(dst, line)
			}
			if err != nil {
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
	}()
	return func() {
		os.Stderr = old
		_ = w.Close()
		<-done
		_ = r.Close()
	}
}
