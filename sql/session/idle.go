package session

import (
	"strconv"
	"time"
)

// SetInteractive gives the session interactive_timeout as its wait_timeout
// (a client that set CLIENT_INTERACTIVE, as MySQL does at connect).
func (s *Session) SetInteractive() {
	s.vars["wait_timeout"] = sysVar{value: s.varValue("interactive_timeout"), numeric: true}
}

// IdleTimeout is wait_timeout: how long the connection may stay idle
// between statements (0: forever).
func (s *Session) IdleTimeout() time.Duration {
	f, err := strconv.ParseFloat(s.varValue("wait_timeout"), 64)
	if err != nil || f <= 0 {
		return 0
	}
	return time.Duration(min(f, 31536000) * float64(time.Second))
}
