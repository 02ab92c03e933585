//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

var active = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("STRATA_FAILPOINTS"), ",") {
		if name, action, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			m[name] = action
		}
	}
	return m
})

// Hit blocks forever when name is set to pause in STRATA_FAILPOINTS, and
// while the file exists when it is set to hold:<path>.
func Hit(name string) {
	action := active()[name]
	if path, ok := strings.CutPrefix(action, "delay:"); ok {
		delay(path)
		return
	}
	switch path, hold := strings.CutPrefix(action, "hold:"); {
	case action == "":
	case action == "pause":
		fmt.Fprintf(os.Stderr, "failpoint %s: pausing\n", name)
		select {}
	case hold:
		if _, err := os.Stat(path); err != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "failpoint %s: holding while %s exists\n", name, path)
		for {
			time.Sleep(5 * time.Millisecond) // polling a file: no event to wait on
			if _, err := os.Stat(path); err != nil {
				fmt.Fprintf(os.Stderr, "failpoint %s: released\n", name)
				return
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "failpoint %s: unknown action %q ignored\n", name, action)
	}
}

// delay sleeps for the duration written in the file at path, if it
// exists and holds one.
func delay(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil && d > 0 {
		time.Sleep(d)
	}
}

var skew = sync.OnceValue(func() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("STRATA_CLOCK_SKEW"))
	return d
})

// strobe is STRATA_CLOCK_STROBE, "<jump>/<period>" (e.g. "5s/200ms"), and
// when it was first read.
var strobe = sync.OnceValues(func() (strobeConfig, time.Time) {
	var c strobeConfig
	if j, p, ok := strings.Cut(os.Getenv("STRATA_CLOCK_STROBE"), "/"); ok {
		c.jump, _ = time.ParseDuration(j)
		c.period, _ = time.ParseDuration(p)
	}
	return c, time.Now()
})

type strobeConfig struct{ jump, period time.Duration }

// offset is the strobe's shift elapsed after it started: jump during every
// other period, nothing in between.
func (c strobeConfig) offset(elapsed time.Duration) time.Duration {
	if c.period <= 0 || (elapsed/c.period)%2 == 0 {
		return 0
	}
	return c.jump
}

// Now is the wall clock shifted by STRATA_CLOCK_SKEW (a duration such as
// "-1h") and, with STRATA_CLOCK_STROBE ("5s/200ms"), jumping forward by
// the strobe's jump and back again every period, to test that no decision
// depends on nodes' clocks agreeing or moving forward.
func Now() time.Time {
	c, start := strobe()
	return time.Now().Add(skew() + c.offset(time.Since(start)))
}
