// Package pdtest starts in-process PD servers for tests.
//
// Each server listens on free loopback ports, keeps its data in t.TempDir()
// and is stopped in t.Cleanup. A stopped server can be restarted on the same
// data dir and addresses (to test persistence across restarts). Not for
// production use.
package pdtest
