//go:build !e2e

package pdclient_test

import "time"

// failoverBound is what TestLeaderKilledUnderTSOLoad allows from the kill to
// the first answer of a new leader. Issue 10's acceptance bound is 5 s (run
// with -tags e2e on a quiet machine); a plain `go test` on this shared
// 2-core machine (load 15-25) sometimes sees a spurious etcd election on top
// of the 3 s lease (6.1 s and 6.6 s seen in about 20 runs), so here it is a
// regression ceiling. The measured gap is always logged.
const failoverBound = 10 * time.Second
