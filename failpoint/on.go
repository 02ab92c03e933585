//go:build failpoints

package failpoint

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	pf "github.com/pingcap/failpoint"
)

// active holds the actions of STRATA_FAILPOINTS that are ours (pause,
// hold:, delay:); every other action is a pingcap/failpoint term, enabled
// there when the variable is first read.
var active = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("STRATA_FAILPOINTS"), ",") {
		name, action, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		if action == "pause" || strings.HasPrefix(action, "hold:") || strings.HasPrefix(action, "delay:") {
			m[name] = action
			continue
		}
		if err := pf.Enable(name, action); err != nil {
			fmt.Fprintf(os.Stderr, "failpoint %s: bad action %q: %v\n", name, action, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "failpoint %s: enabled %q\n", name, action)
	}
	return m
})

// Hit evaluates failpoint name: see Eval.
func Hit(name string) { Eval(name) }

// Eval evaluates failpoint name. Ours: pause blocks forever (logging
// "failpoint <name>: pausing"), hold:<path> blocks while the file exists,
// delay:<path> sleeps the duration the file holds. Otherwise it is
// pingcap/failpoint's, set in STRATA_FAILPOINTS or at run time through
// Handler: its term runs (sleep, panic, pause, a probability or a count)
// and a return term's value comes back with true.
func Eval(name string) (any, bool) {
	action := active()[name]
	if path, ok := strings.CutPrefix(action, "delay:"); ok {
		delay(path)
		return nil, false
	}
	switch path, hold := strings.CutPrefix(action, "hold:"); {
	case action == "":
		v, err := pf.Eval(name)
		return v, err == nil
	case action == "pause":
		fmt.Fprintf(os.Stderr, "failpoint %s: pausing\n", name)
		select {}
	case hold:
		if _, err := os.Stat(path); err != nil {
			return nil, false
		}
		fmt.Fprintf(os.Stderr, "failpoint %s: holding while %s exists\n", name, path)
		for {
			time.Sleep(5 * time.Millisecond) // polling a file: no event to wait on
			if _, err := os.Stat(path); err != nil {
				fmt.Fprintf(os.Stderr, "failpoint %s: released\n", name)
				return nil, false
			}
		}
	}
	return nil, false
}

// Handler serves pingcap/failpoint's HTTP API under a status server's
// /debug/fail/ (PUT /debug/fail/<name> with a term as the body enables,
// DELETE disables, GET lists), as TiDB's /fail/ does.
func Handler() http.Handler {
	return http.StripPrefix("/debug/fail", &pf.HttpHandler{})
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
