//go:build browser

package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDashboardBrowser loads the SQL node's /dashboard in a real headless
// Chromium (Debian's chromium; `make test-dashboard` installs it) after a
// forced slow request, checks the rendered DOM names the slow statement
// and its lock_keys stage, and saves a screenshot to
// $STRATA_DASHBOARD_PNG (default: the test's temp dir).
func TestDashboardBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	require.NoError(t, err, "install Debian's chromium (make test-dashboard does)")
	c, _, dash := startObservedCluster(t)
	forceSlowRequest(t, c)
	// Some ordinary traffic, so the latency curves and histograms have
	// more than one statement type.
	db := openDB(t, c, 0, "test")
	for range 50 {
		var v int
		require.NoError(t, db.QueryRow("SELECT v FROM slowt WHERE id = ?", 1).Scan(&v))
		mustExec(t, db, "UPDATE slowt SET v = v + 1 WHERE id = 1")
	}

	png := os.Getenv("STRATA_DASHBOARD_PNG")
	if png == "" {
		png = filepath.Join(t.TempDir(), "dashboard.png")
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(png), 0o755))
	profile := t.TempDir() // a fresh profile: nothing of another run's
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless", "--disable-gpu", "--no-sandbox",
			"--user-data-dir=" + profile, "--window-size=1400,1000"}, args...)...)
		var out strings.Builder
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Run(), "chromium %v", args)
		return out.String()
	}
	dom := run("--dump-dom", dash)
	require.Contains(t, dom, "<h1>Strata SQL node</h1>")
	require.Contains(t, dom, slowUpdate, "the slow statement is listed")
	require.Regexp(t, `class="slowest stage-name">lock_keys<`, dom, "with its stage named")
	require.Contains(t, dom, "rpc.pessimistic_lock region=", "and its trace")
	require.Contains(t, dom, `<polyline points=`, "the latency curves are drawn")

	if err := os.Remove(png); !os.IsNotExist(err) {
		require.NoError(t, err, "remove the last run's screenshot")
	}
	run("--screenshot="+png, dash)
	st, err := os.Stat(png)
	require.NoError(t, err, "chromium wrote the screenshot")
	require.Greater(t, st.Size(), int64(10<<10), "a rendered page, not a blank one")
	t.Logf("screenshot: %s", png)
}
