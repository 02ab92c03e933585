package chaos

import (
	"fmt"
	"os"
	"testing"

	"github.com/stratadb/strata/localcluster"
)

// binDir holds the binaries built by TestMain.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// With failpoints: STRATA_CLOCK_SKEW shifts a process's wall clock
	// (the clock nemesis).
	if err := localcluster.Build(dir, "failpoints"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
