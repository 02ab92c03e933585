package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// failure is one statement whose output differs from TiDB's .result.
type failure struct {
	stmt string
	// want is what the .result holds after the statement's echo, up to the
	// next statement's (wantKnown false: the .result does not echo it, so
	// it cannot be told apart).
	want      string
	wantKnown bool
	got       string // the server's output, without the echo
	echoed    bool
}

// String is the one-line form -show prints.
func (f failure) String() string {
	return fmt.Sprintf("%.120s => got %.200s", oneLine(f.stmt), oneLine(f.got))
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", " | ")
}

var errLine = regexp.MustCompile(`^Error (\d+) \(([0-9A-Z]+)\): (.*)`)

// parseErr reads an output that is one error: its code and message.
func parseErr(out string) (code, msg string, ok bool) {
	first, _, _ := strings.Cut(out, "\n")
	if m := errLine.FindStringSubmatch(first); m != nil {
		return m[1], m[3], true
	}
	if strings.HasPrefix(first, "Error: ") {
		return "client", strings.TrimPrefix(first, "Error: "), true
	}
	return "", "", false
}

// reason classifies a failure: class is what a per-family count groups
// by; detail names what differs in this statement.
func (f failure) reason() (class, detail string) {
	gotCode, gotMsg, gotErr := parseErr(f.got)
	if !f.wantKnown {
		if gotErr {
			return "error " + gotCode + " (TiDB's result not echoed)", gotMsg
		}
		return "output differs (TiDB's result not echoed)", ""
	}
	wantCode, wantMsg, wantErr := parseErr(f.want)
	switch {
	case gotErr && !wantErr:
		switch gotCode {
		case "1235", "8200":
			return "Strata does not support it (" + gotCode + ")", gotMsg
		case "1064":
			return "Strata does not parse it (1064)", gotMsg
		case "1146", "1049", "1051", "1054", "1050", "1091", "1061", "1060", "1062":
			// Often the echo of an earlier failing statement (a table not
			// created, a row not inserted), sometimes a missing feature.
			return "Strata errors " + gotCode + " where TiDB succeeds", gotMsg
		}
		return "Strata errors where TiDB succeeds", gotCode + ": " + gotMsg
	case wantErr && !gotErr:
		return "TiDB errors, Strata succeeds", wantCode + ": " + wantMsg
	case wantErr && gotErr && wantCode != gotCode:
		return "different error code", "TiDB " + wantCode + " (" + wantMsg + "), Strata " + gotCode + " (" + gotMsg + ")"
	case wantErr && gotErr:
		return "same error code, other message", wantCode + ": TiDB " + wantMsg + " / Strata " + gotMsg
	}
	wl, gl := lines(f.want), lines(f.got)
	upper := strings.ToUpper(f.stmt)
	explain := strings.HasPrefix(upper, "EXPLAIN") || strings.HasPrefix(upper, "DESC")
	if len(wl) > 0 && len(gl) > 0 && wl[0] != gl[0] {
		if explain {
			return "EXPLAIN output differs", "TiDB " + wl[0] + " / Strata " + gl[0]
		}
		return "column names differ", "TiDB " + wl[0] + " / Strata " + gl[0]
	}
	if len(wl) != len(gl) {
		return "row count differs", fmt.Sprintf("TiDB %d rows, Strata %d", max(len(wl)-1, 0), max(len(gl)-1, 0))
	}
	for i := range wl {
		if wl[i] != gl[i] {
			if explain {
				return "EXPLAIN output differs", "row " + fmt.Sprint(i) + ": TiDB " + wl[i] + " / Strata " + gl[i]
			}
			if strings.HasPrefix(upper, "SHOW") {
				return "SHOW output differs", "row " + fmt.Sprint(i) + ": TiDB " + wl[i] + " / Strata " + gl[i]
			}
			return "values differ", "row " + fmt.Sprint(i) + ": TiDB " + wl[i] + " / Strata " + gl[i]
		}
	}
	return "output differs", ""
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// fileFailures is one file's result.
type fileFailures struct {
	name      string
	ok, total int
	fails     []failure
}

var (
	createTable = regexp.MustCompile("(?i)^create\\s+table\\s+(?:if\\s+not\\s+exists\\s+)?`?(\\w+)`?")
	noTable     = regexp.MustCompile(`^Table '[^'.]*\.(\w+)' doesn't exist`)
)

// reason is the reason of failure i in its file: a 1146 on a table whose
// CREATE TABLE failed earlier in the file follows from that failure, and
// says which; else failure.reason.
func (ff *fileFailures) reason(i int) (class, detail string) {
	class, detail = ff.fails[i].reason()
	m := noTable.FindStringSubmatch(detail)
	if m == nil || !strings.HasPrefix(class, "Strata errors 1146") {
		return class, detail
	}
	for j := i - 1; j >= 0; j-- {
		g := ff.fails[j]
		if c := createTable.FindStringSubmatch(g.stmt); c != nil && strings.EqualFold(c[1], m[1]) {
			gc, gd := g.reason()
			return "table missing: its CREATE TABLE failed", fmt.Sprintf("#%d: %s (%s)", j+1, gc, gd)
		}
	}
	return class, detail
}

// failureReport renders every failure with its reason as Markdown: the
// reasons with their counts, per family (the file's first path element),
// then each file's failures.
func failureReport(files []fileFailures) string {
	var sb strings.Builder
	counts := map[string]map[string]int{} // reason class → family → count
	families := map[string]bool{}
	famOK, famTotal := map[string]int{}, map[string]int{}
	total := 0
	for _, ff := range files {
		fam, _, _ := strings.Cut(ff.name, "/")
		families[fam] = true
		famOK[fam] += ff.ok
		famTotal[fam] += ff.total
		for i := range ff.fails {
			class, _ := ff.reason(i)
			if counts[class] == nil {
				counts[class] = map[string]int{}
			}
			counts[class][fam]++
			total++
		}
	}
	fams := sortedKeys(families)
	sb.WriteString("## Statements matching TiDB's result, per family\n\n| family | match | statements |\n|---|---:|---:|\n")
	for _, fam := range fams {
		fmt.Fprintf(&sb, "| %s | %d | %d |\n", fam, famOK[fam], famTotal[fam])
	}
	sb.WriteString("\n")
	classes := make([]string, 0, len(counts))
	sums := map[string]int{}
	for c, m := range counts {
		classes = append(classes, c)
		for _, n := range m {
			sums[c] += n
		}
	}
	sort.Slice(classes, func(i, j int) bool {
		if sums[classes[i]] != sums[classes[j]] {
			return sums[classes[i]] > sums[classes[j]]
		}
		return classes[i] < classes[j]
	})
	fmt.Fprintf(&sb, "## Failures by reason (%d statements)\n\n| reason | all | %s |\n|---|---:|%s\n", total, strings.Join(fams, " | "), strings.Repeat("---:|", len(fams)))
	for _, c := range classes {
		fmt.Fprintf(&sb, "| %s | %d |", c, sums[c])
		for _, fam := range fams {
			fmt.Fprintf(&sb, " %d |", counts[c][fam])
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\n## Every failure\n\nPer file: the statement, the reason, and the detail that differs (the first differing row for results).\n")
	for _, ff := range files {
		if len(ff.fails) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "\n### %s (%d of %d match)\n\n| # | statement | reason | detail |\n|---:|---|---|---|\n", ff.name, ff.ok, ff.total)
		for i, f := range ff.fails {
			class, detail := ff.reason(i)
			fmt.Fprintf(&sb, "| %d | `%s` | %s | %s |\n", i+1, cell(f.stmt, 160), class, cell(detail, 240))
		}
	}
	return sb.String()
}

// cell makes s one Markdown table cell of at most n bytes.
func cell(s string, n int) string {
	s = oneLine(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "`", "'")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
