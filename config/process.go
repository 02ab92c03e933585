package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// ShutdownContext is cancelled by the first SIGINT or SIGTERM, which starts
// a process's graceful stop; a second signal then kills the process at once
// (the default action), instead of waiting for that stop. Call stop when
// done with it.
func ShutdownContext() (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	return ctx, stop
}

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
