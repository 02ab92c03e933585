// Command rewrite moves a package's import path in every Go file under the
// current directory, renaming its package-qualified uses when the package
// name changes. It is the tool the layout commits (issue 26) were made with,
// kept so a branch written against the old paths can be re-based by running
// the same commands:
//
//	go run ./internal/layout/rewrite OLDPATH NEWPATH [NEWNAME]
//
// Only identifiers that resolve to the import (not local variables of the
// same name) are renamed; an alias that differs from both names is kept.
// Files are rewritten only when they change, through go/format.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 3 || len(os.Args) > 4 {
		fmt.Fprintln(os.Stderr, "usage: rewrite OLDPATH NEWPATH [NEWNAME]")
		os.Exit(2)
	}
	oldPath, newPath := os.Args[1], os.Args[2]
	newName := path.Base(newPath)
	if len(os.Args) == 4 {
		newName = os.Args[3]
	}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		return rewriteFile(p, oldPath, newPath, newName)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func rewriteFile(name, oldPath, newPath, newName string) error {
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return err
	}
	changed := false
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		var rest string
		switch {
		case p == oldPath:
		case strings.HasPrefix(p, oldPath+"/"):
			rest = p[len(oldPath):]
		default:
			continue
		}
		imp.Path.Value = strconv.Quote(newPath + rest)
		changed = true
		if rest != "" {
			continue // a subpackage: its name does not change
		}
		oldName := path.Base(oldPath)
		if imp.Name != nil {
			if imp.Name.Name != newName {
				continue // a distinct alias stays
			}
			oldName = imp.Name.Name
			imp.Name = nil
		}
		if oldName == newName {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == oldName && id.Obj == nil {
					id.Name = newName
				}
			}
			return true
		})
	}
	if !changed {
		return nil
	}
	ast.SortImports(fset, f)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}
