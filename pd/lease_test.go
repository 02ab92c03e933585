package pd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLeaderLeaseFromSendTime: the local expiry counts from when a renewal
// was sent, never from when its answer arrived, and never moves backwards.
func TestLeaderLeaseFromSendTime(t *testing.T) {
	const ttl = 3 * time.Second
	now := time.Now()
	for _, tc := range []struct {
		name  string
		sends []time.Duration // send times relative to now, in order applied
		valid bool
	}{
		{"never renewed", nil, false},
		{"fresh renewal", []time.Duration{-time.Second}, true},
		// A response that arrives now for a renewal sent ttl ago (the
		// leader was paused in between) does not make the lease valid.
		{"late answer to an old renewal", []time.Duration{-ttl}, false},
		{"inside the margin", []time.Duration{-ttl + leaseMargin(ttl)/2}, false},
		{"older answer after a newer one", []time.Duration{-time.Second, -2 * ttl}, true},
	} {
		l := &leaderLease{ttl: ttl, margin: leaseMargin(ttl), base: now.Add(-time.Hour)}
		for _, d := range tc.sends {
			l.extend(now.Add(d), ttl)
		}
		require.Equal(t, tc.valid, l.valid(), tc.name)
	}
	require.Equal(t, 500*time.Millisecond, leaseMargin(ttl))
	require.Equal(t, 200*time.Millisecond, leaseMargin(time.Second))
}
