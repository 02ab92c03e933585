// Command proccpu prints the CPU seconds (user + system, from
// /proc/<pid>/stat through localcluster.CPUSeconds, as bench/sysbench
// accounts its server processes) of each PID given, one `pid seconds`
// line per PID, 0 for a process that is gone. The shell scripts of
// bench/ read it before and after a run for the servers' CPU per
// transaction.
//
//	go run ./bench/proccpu 1234 1235
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/stratadb/strata/localcluster"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: proccpu PID...")
		os.Exit(2)
	}
	for _, a := range os.Args[1:] {
		pid, err := strconv.Atoi(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "proccpu: pid %q: %v\n", a, err)
			os.Exit(2)
		}
		fmt.Printf("%d %.2f\n", pid, localcluster.CPUSeconds(pid))
	}
}
