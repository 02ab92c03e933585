package layout

import (
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/stratadb/strata"

// knownExceptions are store/ imports the rule forbids that need design work
// to remove, each with the reason. None today: the schema model the
// coprocessor decodes rows by lives in sql/model, beside the codec.
var knownExceptions = map[string]string{}

// goList runs `go list` with args from the module root.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, msg)
	}
	return strings.Fields(string(out))
}

// local is path relative to the module, "" for packages outside it.
func local(path string) string {
	if rest, ok := strings.CutPrefix(path, module+"/"); ok {
		return rest
	}
	return ""
}

func matching(pkgs []string, re *regexp.Regexp) []string {
	var out []string
	for _, p := range pkgs {
		if l := local(p); l != "" && re.MatchString(l) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func TestStoreNodeLinksNoSQLFrontEnd(t *testing.T) {
	bad := matching(goList(t, "-deps", "./cmd/storenode"),
		regexp.MustCompile(`^sql/(server|session|planner|executor|ddl|domain)(/|$)`))
	if len(bad) > 0 {
		t.Errorf("cmd/storenode depends on SQL front-end packages: %v", bad)
	}
}

func TestSQLNodeLinksNoStore(t *testing.T) {
	bad := matching(goList(t, "-deps", "./cmd/sqlnode"), regexp.MustCompile(`^store(/|$)`))
	if len(bad) > 0 {
		t.Errorf("cmd/sqlnode depends on store packages: %v", bad)
	}
}

func TestStoreImportsOnlySharedSQL(t *testing.T) {
	shared := regexp.MustCompile(`^sql/(types|expr|tablecodec|model|collate)$`)
	forbidden := regexp.MustCompile(`^(kvclient|sql)(/|$)`)
	used := map[string]bool{}
	// Production imports (tests of a store package may drive it through
	// the KV client).
	for _, line := range goList(t, "-f", `{{.ImportPath}}:{{join .Imports ","}}`, "./store/...") {
		pkg, imports, _ := strings.Cut(line, ":")
		for _, imp := range strings.Split(imports, ",") {
			l := local(imp)
			if l == "" || !forbidden.MatchString(l) || shared.MatchString(l) {
				continue
			}
			edge := local(pkg) + " -> " + l
			if _, ok := knownExceptions[edge]; ok {
				used[edge] = true
				continue
			}
			t.Errorf("%s: store packages may import only sql/types, sql/expr, sql/collate, sql/tablecodec and sql/model from sql/, nothing from kvclient/", edge)
		}
	}
	for edge, why := range knownExceptions {
		if !used[edge] {
			t.Errorf("known exception %q (%s) is gone: remove it from knownExceptions", edge, why)
		}
	}
	if bad := matching(goList(t, "-deps", "./store/..."), regexp.MustCompile(`^kvclient(/|$)`)); len(bad) > 0 {
		t.Errorf("store packages depend on the KV client: %v", bad)
	}
}
