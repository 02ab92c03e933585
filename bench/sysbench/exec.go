package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// runSysbench runs sysbench with args, copies its combined output to raw
// (after a header line with the command) and returns that output.
func runSysbench(ctx context.Context, bin string, args []string, timeout time.Duration, raw io.Writer) (string, error) {
	out, _, err := runClient(ctx, bin, args, timeout, raw)
	return out, err
}

// runClient runs a load client (sysbench, our Go driver, go-tpc) with its
// output copied to raw, and returns the output and the CPU seconds (user +
// system) the client itself used: on a 2-core machine the client's share
// is part of the picture.
func runClient(ctx context.Context, bin string, args []string, timeout time.Duration, raw io.Writer) (string, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fmt.Fprintf(raw, "==== %s %s\n", bin, strings.Join(args, " "))
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = io.MultiWriter(&buf, raw)
	cmd.Stderr = cmd.Stdout
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var cpu float64
	if ps := cmd.ProcessState; ps != nil {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	if err != nil {
		fmt.Fprintf(raw, "==== exit: %v\n", err)
	}
	return buf.String(), cpu, err
}

// failure summarises why a sysbench command failed: its FATAL lines, or the
// last lines of output, plus the exit status.
func failure(out string, err error) string {
	o := ParseOutput(out)
	var lines []string
	if len(o.Fatal) > 0 {
		lines = o.Fatal[:min(2, len(o.Fatal))]
	} else {
		all := strings.Split(strings.TrimSpace(out), "\n")
		lines = all[max(0, len(all)-5):]
	}
	msg := strings.Join(lines, " | ")
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return msg
}
