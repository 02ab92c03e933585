// Package config loads a process's configuration in three layers, each
// overriding the one before: the defaults in the struct, an optional TOML
// file (--config), and the command-line flags the user actually set. An
// unknown key or a value of the wrong type in the file is rejected with an
// error naming the key, so a typo never silently falls back to a default.
//
// It also holds the few lines of process setup the three mains share:
// logger, shutdown signals, address lists.
package config
