//go:build !failpoints

package failpoint

import (
	"net/http"
	"time"
)

// Hit does nothing: this build has no failpoints.
func Hit(string) {}

// Eval finds nothing: this build has no failpoints.
func Eval(string) (any, bool) { return nil, false }

// Handler is nil: this build has no failpoints to set at run time.
func Handler() http.Handler { return nil }

// Now is the wall clock (no skew in this build).
func Now() time.Time { return time.Now() }
