//go:build !failpoints

package failpoint

import "time"

// Hit does nothing: this build has no failpoints.
func Hit(string) {}

// Now is the wall clock (no skew in this build).
func Now() time.Time { return time.Now() }
