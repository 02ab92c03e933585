// Command promget prints the samples of one metric family from a process's
// /metrics, parsed with the Prometheus text parser (internal/promtext), one
// per line as `name{labels} value`, sorted; the shell scripts of bench/
// read metrics through it instead of grepping the text format.
//
//	go run ./bench/promget 127.0.0.1:20180 strata_sql_errors_total
//	go run ./bench/promget --sum 127.0.0.1:20180 strata_raftstore_regions type=leaders
//
// With --sum it prints only the sum of the samples whose labels include
// every given label=value pair. It exits 1 when the page cannot be read.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/stratadb/strata/internal/promtext"
)

func main() {
	sum := flag.Bool("sum", false, "print the sum of the matching samples only")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: promget [--sum] HOST:PORT METRIC [LABEL=VALUE ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 2 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := promtext.Fetch(context.Background(), flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "promget:", err)
		os.Exit(1)
	}
	if err := write(os.Stdout, f, flag.Arg(1), flag.Args()[2:], *sum); err != nil {
		fmt.Fprintln(os.Stderr, "promget:", err)
		os.Exit(2)
	}
}

// write prints the series of name in f whose labels include every
// label=value of match, or with sum only their sum.
func write(w io.Writer, f promtext.Families, name string, match []string, sum bool) error {
	want := map[string]string{}
	for _, m := range match {
		k, v, ok := strings.Cut(m, "=")
		if !ok {
			return fmt.Errorf("label %q: want LABEL=VALUE", m)
		}
		want[k] = v
	}
	if sum {
		_, err := fmt.Fprintln(w, strconv.FormatFloat(f.Sum(name, want), 'f', -1, 64))
		return err
	}
	fam := f[name]
	if fam == nil {
		return nil
	}
	var lines []string
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !includes(labels, want) {
			continue
		}
		var v float64
		switch {
		case m.GetCounter() != nil:
			v = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v = m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue // histograms and summaries: use --sum with name_sum / name_count
		}
		lines = append(lines, promtext.SeriesKey(name, m.GetLabel())+" "+strconv.FormatFloat(v, 'f', -1, 64))
	}
	slices.Sort(lines)
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

func includes(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}
