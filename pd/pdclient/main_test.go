package pdclient_test

import (
	"os"
	"testing"

	"github.com/stratadb/strata/pd/pdtest"
)

// TestMain lets the test binary run as a PD member process (pdtest.StartProcs).
func TestMain(m *testing.M) {
	pdtest.RunChild()
	os.Exit(m.Run())
}
