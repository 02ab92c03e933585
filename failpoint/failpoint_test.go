//go:build failpoints

package failpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdPath is the file that holds failpoint h (STRATA_FAILPOINTS is read
// once per process, so every test's points are set here).
var holdPath = filepath.Join(os.TempDir(), "strata-failpoint-test-hold")

func TestMain(m *testing.M) {
	os.Setenv("STRATA_FAILPOINTS", "a=pause, b=bogus, h=hold:"+holdPath)
	os.Exit(m.Run())
}

func TestPause(t *testing.T) {
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

func TestHold(t *testing.T) {
	_ = os.Remove(holdPath)
	Hit("h") // no file: returns
	require.NoError(t, os.WriteFile(holdPath, nil, 0o644))
	t.Cleanup(func() { _ = os.Remove(holdPath) })
	done := make(chan struct{})
	go func() { Hit("h"); close(done) }()
	select {
	case <-done:
		t.Fatal("Hit(h) returned while the file exists")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, os.Remove(holdPath))
	<-done
}
