//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"strings"
	"sync"
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

// Hit blocks forever when name is set to pause in STRATA_FAILPOINTS.
func Hit(name string) {
	switch action := active()[name]; action {
	case "":
	case "pause":
		fmt.Fprintf(os.Stderr, "failpoint %s: pausing\n", name)
		select {}
	default:
		fmt.Fprintf(os.Stderr, "failpoint %s: unknown action %q ignored\n", name, action)
	}
}
