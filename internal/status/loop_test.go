package status

import (
	"context"
	"errors"
	"testing"
)

// TestLoopUnreachable: a cluster that does not answer is evaluated once,
// not watched, and the run ends with that evaluation's result.
func TestLoopUnreachable(t *testing.T) {
	want := errors.New("exit 1")
	var causes []string
	err := Loop(context.Background(), LoopOptions{
		Reachable: func() bool { return false },
		Evaluate: func(n int, cause string) error {
			causes = append(causes, cause)
			if n != len(causes) {
				t.Errorf("evaluation %d numbered %d", len(causes), n)
			}
			return want
		},
		Fail: func(err error) error { t.Errorf("Fail(%v) called", err); return err },
	})
	if !errors.Is(err, want) || len(causes) != 1 || causes[0] != "" {
		t.Errorf("Loop = %v after evaluations %q, want one evaluation and its result", err, causes)
	}
}
