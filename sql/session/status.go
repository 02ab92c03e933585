package session

// StatusVar is one SHOW STATUS row.
type StatusVar struct{ Name, Value string }

// SetStatusVars sets the source of SHOW STATUS rows for this session (the
// server's per-connection state: TLS cipher and version, ...). f is called
// on the session's goroutine for each SHOW STATUS and returns rows sorted
// by name.
func (s *Session) SetStatusVars(f func() []StatusVar) { s.statusVars = f }
