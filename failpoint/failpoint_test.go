//go:build failpoints

package failpoint

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdPath is the file that holds failpoint h (STRATA_FAILPOINTS is read
// once per process, so every test's points are set here).
var (
	holdPath  = filepath.Join(os.TempDir(), "strata-failpoint-test-hold")
	delayPath = filepath.Join(os.TempDir(), "strata-failpoint-test-delay")
)

func TestMain(m *testing.M) {
	os.Setenv("STRATA_FAILPOINTS", "a=pause, h=hold:"+holdPath+", d=delay:"+delayPath+", r=return(7), p=panic")
	os.Exit(m.Run())
}

func TestPause(t *testing.T) {
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

func TestDelay(t *testing.T) {
	_ = os.Remove(delayPath)
	t.Cleanup(func() { _ = os.Remove(delayPath) })
	Hit("d") // no file: returns at once
	require.NoError(t, os.WriteFile(delayPath, []byte("80ms\n"), 0o644))
	start := time.Now()
	Hit("d")
	require.GreaterOrEqual(t, time.Since(start), 80*time.Millisecond, "Hit(d) sleeps the file's duration")
	require.NoError(t, os.WriteFile(delayPath, []byte("not a duration"), 0o644))
	Hit("d") // unparsable: returns
	require.NoError(t, os.Remove(delayPath))
	Hit("d")
}

func TestStrobeOffset(t *testing.T) {
	c := strobeConfig{jump: 5 * time.Second, period: 200 * time.Millisecond}
	for _, tc := range []struct {
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 0}, {199 * time.Millisecond, 0}, {200 * time.Millisecond, 5 * time.Second},
		{399 * time.Millisecond, 5 * time.Second}, {400 * time.Millisecond, 0}, {650 * time.Millisecond, 5 * time.Second},
	} {
		require.Equal(t, tc.want, c.offset(tc.elapsed), "at %v", tc.elapsed)
	}
	require.Zero(t, strobeConfig{}.offset(time.Second), "no strobe configured")
}

// Actions other than ours are pingcap/failpoint terms (r and p, from
// STRATA_FAILPOINTS): return values, panics; Handler sets and clears terms
// at run time, counts included. Failpoints are process-wide: what the test
// sets it clears, so it passes again under -count.
func TestPingcapTerms(t *testing.T) {
	v, ok := Eval("r")
	require.True(t, ok)
	require.Equal(t, 7, v)
	require.Panics(t, func() { Hit("p") })

	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close) // after the cleanups below, which use it
	set := func(method, name, term string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/debug/fail/"+name, strings.NewReader(term))
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s %s", method, name)
	}
	_, ok = Eval("later")
	require.False(t, ok)
	set(http.MethodPut, "later", `return("x")`)
	t.Cleanup(func() { set(http.MethodDelete, "later", "") })
	v, ok = Eval("later")
	require.True(t, ok)
	require.Equal(t, "x", v)

	set(http.MethodPut, "two", "2*return(true)")
	t.Cleanup(func() { set(http.MethodDelete, "two", "") })
	for range 2 {
		v, ok := Eval("two")
		require.True(t, ok)
		require.Equal(t, true, v)
	}
	_, ok = Eval("two")
	require.False(t, ok, "2*return fires twice")
}
