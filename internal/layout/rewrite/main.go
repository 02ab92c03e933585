// Command rewrite moves a package's import path in every Go file under the
// current directory, renaming its package-qualified uses when the package
// name changes. It is the tool the layout commits (issue 26) were made with,
// kept so a branch written against the old paths can be re-based by running
// the same commands:
//
//	go run ./internal/layout/rewrite OLDPATH NEWPATH [NEWNAME]
//	go run ./internal/layout/rewrite -sym OLDPATH NEWPATH Sym1,Sym2,...
//
// Only identifiers that resolve to the import (not local variables of the
// same name) are renamed; an alias that differs from both names is kept.
// With -sym, the named declarations have moved from package OLDPATH to
// NEWPATH: OLDPATH's uses get qualified, NEWPATH's lose the qualifier,
// everyone else's switch packages; imports are added and dropped to match.
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
	"sort"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) == 5 && os.Args[1] == "-sym" {
		syms := map[string]bool{}
		for _, s := range strings.Split(os.Args[4], ",") {
			syms[s] = true
		}
		walk(func(p string) error { return moveSyms(p, os.Args[2], os.Args[3], syms) })
		return
	}
	if len(os.Args) < 3 || len(os.Args) > 4 {
		fmt.Fprintln(os.Stderr, "usage: rewrite OLDPATH NEWPATH [NEWNAME]")
		os.Exit(2)
	}
	oldPath, newPath := os.Args[1], os.Args[2]
	newName := path.Base(newPath)
	if len(os.Args) == 4 {
		newName = os.Args[3]
	}
	walk(func(p string) error { return rewriteFile(p, oldPath, newPath, newName) })
}

// walk calls fn for every .go file under the current directory (the
// module root), outside testdata.
func walk(fn func(path string) error) {
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
		return fn(p)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parse(name string, src []byte) (*token.FileSet, *ast.File, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	return fset, f, err
}

// write formats f, imports sorted, into the file name.
func write(name string, fset *token.FileSet, f *ast.File) error {
	ast.SortImports(fset, f)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

func rewriteFile(name, oldPath, newPath, newName string) error {
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	fset, f, err := parse(name, src)
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
	return write(name, fset, f)
}

// modulePath is the module of the current directory's go.mod.
func modulePath() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		panic(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(l, "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	panic("go.mod: no module line")
}

type edit struct {
	off  int
	end  int
	text string
}

func applyEdits(src []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].off > edits[j].off })
	for _, e := range edits {
		src = append(src[:e.off:e.off], append([]byte(e.text), src[e.end:]...)...)
	}
	return src
}

// importName is the name file f uses for importPath ("" when not imported).
func importName(f *ast.File, importPath string) (string, *ast.ImportSpec) {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			if imp.Name != nil {
				return imp.Name.Name, imp
			}
			return path.Base(p), imp
		}
	}
	return "", nil
}

// usesPkg reports whether f has a selector name.X with name unresolved (a
// package).
func usesPkg(f *ast.File, name string) bool {
	used := false
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && id.Obj == nil {
				used = true
			}
		}
		return !used
	})
	return used
}

func moveSyms(name, oldPath, newPath string, syms map[string]bool) error {
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	fset, f, err := parse(name, src)
	if err != nil {
		return err
	}
	pkgPath := path.Join(modulePath(), filepath.ToSlash(filepath.Dir(name)))
	external := strings.HasSuffix(f.Name.Name, "_test")
	inOld := pkgPath == oldPath && !external
	inNew := pkgPath == newPath && !external
	newName := path.Base(newPath)
	oldName, _ := importName(f, oldPath)
	off := func(p token.Pos) int { return fset.Position(p).Offset }

	skip := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			skip[n.Sel] = true
		case *ast.Field:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.FuncDecl:
			skip[n.Name] = true
		case *ast.TypeSpec:
			skip[n.Name] = true
		case *ast.ValueSpec:
			for _, id := range n.Names {
				skip[id] = true
			}
		}
		return true
	})
	var edits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if ok && oldName != "" && id.Name == oldName && id.Obj == nil && syms[n.Sel.Name] {
				q := newName + "."
				if inNew {
					q = ""
				}
				edits = append(edits, edit{off(id.Pos()), off(n.Sel.Pos()), q})
			}
		case *ast.Ident:
			if inOld && !skip[n] && n.Obj == nil && syms[n.Name] {
				edits = append(edits, edit{off(n.Pos()), off(n.Pos()), newName + "."})
			}
		}
		return true
	})
	if len(edits) == 0 {
		return nil
	}
	src = applyEdits(src, edits)
	if fset, f, err = parse(name, src); err != nil {
		return err
	}
	edits = edits[:0]
	oldN, oldImp := importName(f, oldPath)
	drop := oldImp != nil && !usesPkg(f, oldN)
	newN, _ := importName(f, newPath)
	add := newN == "" && !inNew && usesPkg(f, newName)
	switch {
	case drop && add: // the old import becomes the new one
		edits = append(edits, edit{off(oldImp.Pos()), off(oldImp.End()), strconv.Quote(newPath)})
	case drop:
		start := off(fset.File(oldImp.Pos()).LineStart(fset.Position(oldImp.Pos()).Line))
		end := off(oldImp.End())
		if end < len(src) && src[end] == '\n' {
			end++
		}
		edits = append(edits, edit{start, end, ""})
	case add:
		at := -1
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, modulePath()+"/") {
				at = off(imp.Pos())
			}
		}
		line := strconv.Quote(newPath) + "\n\t"
		if at < 0 { // a group of its own after the last import, or after the package clause
			at, line = off(f.Name.End()), "\n\nimport "+strconv.Quote(newPath)
			if n := len(f.Imports); n > 0 {
				at, line = off(f.Imports[n-1].End()), "\n\n\t"+strconv.Quote(newPath)
				if d := f.Decls[0].(*ast.GenDecl); !d.Lparen.IsValid() {
					line = "\nimport " + strconv.Quote(newPath)
				}
			}
		}
		edits = append(edits, edit{at, at, line})
	}
	src = applyEdits(src, edits)
	if fset, f, err = parse(name, src); err != nil {
		return err
	}
	return write(name, fset, f)
}
