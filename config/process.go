package config

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// SetupLogger makes a structured text logger on stderr at level ("debug",
// "info", "warn", "error") the process default, and returns it.
func SetupLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("config: log-level %q: want debug, info, warn or error", level)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	slog.SetDefault(logger)
	return logger, nil
}

// SplitList splits a comma-separated list (such as PD addresses), dropping
// blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
