//go:build e2e

package pdclient_test

import "time"

// failoverBound is issue 10's acceptance bound (see kill_bound_test.go).
const failoverBound = 5 * time.Second
