package server_test

import "testing"

// TestTypeScripts runs testdata/types: MySQL type semantics end to end
// (DECIMAL storage, arithmetic, comparison, aggregates and text output).
func TestTypeScripts(t *testing.T) { runScripts(t, "testdata/types") }
