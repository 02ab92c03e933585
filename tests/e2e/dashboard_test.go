package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDashboardMetricsExist checks that deploy/grafana/strata.json parses and
// that every strata_* metric its queries use is one the code registers, so
// the dashboard cannot silently drift from the metrics. It needs no Docker.
func TestDashboardMetricsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "strata.json"))
	require.NoError(t, err)
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Panels)

	// Metric names the code registers: Namespace "strata", Subsystem, Name.
	defRE := regexp.MustCompile(`Namespace:\s*"strata",\s*Subsystem:\s*"(\w+)",\s*Name:\s*"(\w+)"`)
	defined := map[string]bool{}
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "data" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range defRE.FindAllStringSubmatch(string(src), -1) {
			defined["strata_"+m[1]+"_"+m[2]] = true
		}
		return nil
	}))
	require.NotEmpty(t, defined)

	useRE := regexp.MustCompile(`\bstrata_\w+`)
	used := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			for _, name := range useRE.FindAllString(tg.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && defined[b] {
						base = b
					}
				}
				require.True(t, defined[base], "panel %q uses %s, which no code registers", p.Title, name)
				used++
			}
		}
	}
	require.Positive(t, used)
}
