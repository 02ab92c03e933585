//go:build failpoints

package failpoint

import (
	"testing"
	"time"
)

func TestPause(t *testing.T) {
	t.Setenv("STRATA_FAILPOINTS", "a=pause, b=bogus")
	Hit("b") // unknown action: returns
	Hit("c") // not set: returns
	done := make(chan struct{})
	go func() { Hit("a"); close(done) }()
	select {
	case <-done:
		t.Fatal("Hit(a) returned; want it paused")
	case <-time.After(50 * time.Millisecond):
	}
}
