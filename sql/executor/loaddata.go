package executor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
)

// LoadBatchRows is how many rows of LOAD DATA go into one INSERT (one
// transaction under autocommit).
const LoadBatchRows = 1000

// loadFormat is the FIELDS / LINES clause of LOAD DATA with MySQL's
// defaults.
type loadFormat struct {
	fieldTerm, lineTerm, lineStart []byte
	enclosed, escaped              byte // 0: none
}

func newLoadFormat(x *ast.LoadDataStmt) (loadFormat, error) {
	f := loadFormat{fieldTerm: []byte("\t"), lineTerm: []byte("\n"), escaped: '\\'}
	if fi := x.FieldsInfo; fi != nil {
		if fi.Terminated != nil {
			f.fieldTerm = []byte(*fi.Terminated)
		}
		if fi.Enclosed != nil && *fi.Enclosed != "" {
			f.enclosed = (*fi.Enclosed)[0]
		}
		if fi.Escaped != nil {
			f.escaped = 0
			if *fi.Escaped != "" {
				f.escaped = (*fi.Escaped)[0]
			}
		}
		if fi.DefinedNullBy != nil {
			return f, errno.NotSupported("LOAD DATA ... NULL DEFINED BY")
		}
	}
	if li := x.LinesInfo; li != nil {
		if li.Terminated != nil {
			f.lineTerm = []byte(*li.Terminated)
		}
		if li.Starting != nil {
			f.lineStart = []byte(*li.Starting)
		}
	}
	if len(f.lineTerm) == 0 {
		return f, errno.NotSupported("LOAD DATA with an empty LINES TERMINATED BY")
	}
	if len(f.fieldTerm) == 0 {
		return f, errno.NotSupported("LOAD DATA with an empty FIELDS TERMINATED BY")
	}
	return f, nil
}

// loadField is one parsed field; null for an unenclosed \N (or an
// unenclosed NULL when fields are ENCLOSED BY something).
type loadField struct {
	val  []byte
	null bool
}

// loadReader splits LOAD DATA input into records, streaming.
type loadReader struct {
	r   *bufio.Reader
	f   loadFormat
	buf []byte
}

// hasPrefix reports whether the input continues with p (without consuming).
func (l *loadReader) hasPrefix(p []byte) bool {
	b, _ := l.r.Peek(len(p))
	return bytes.Equal(b, p)
}

// skipToLineStart discards input up to and including LINES STARTING BY.
func (l *loadReader) skipToLineStart() error {
	for !l.hasPrefix(l.f.lineStart) {
		if _, err := l.r.ReadByte(); err != nil {
			return err
		}
	}
	_, err := l.r.Discard(len(l.f.lineStart))
	return err
}

func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 26
	}
	return c
}

// next returns the next record; io.EOF when the input is exhausted.
func (l *loadReader) next(fields []loadField) ([]loadField, error) {
	fields = fields[:0]
	l.buf = l.buf[:0] // the previous record's fields are no longer used
	if _, err := l.r.Peek(1); err != nil {
		return nil, err
	}
	if len(l.f.lineStart) > 0 {
		if err := l.skipToLineStart(); err != nil {
			return nil, err
		}
	}
	for {
		start := len(l.buf)
		quoted, null := false, false
		if l.f.enclosed != 0 && l.hasPrefix([]byte{l.f.enclosed}) {
			quoted = true
			_, _ = l.r.ReadByte()
		}
		enclosed := quoted
		endLine, eof := false, false
		for {
			// Terminators end an unquoted field (a quoted one ends at its
			// closing quote, after which quoted is false).
			if !quoted {
				if l.hasPrefix(l.f.fieldTerm) {
					_, _ = l.r.Discard(len(l.f.fieldTerm))
					break
				}
				if l.hasPrefix(l.f.lineTerm) {
					_, _ = l.r.Discard(len(l.f.lineTerm))
					endLine = true
					break
				}
			}
			c, err := l.r.ReadByte()
			if err == io.EOF {
				eof = true
				break
			}
			if err != nil {
				return nil, err
			}
			switch {
			case l.f.escaped != 0 && c == l.f.escaped:
				e, err := l.r.ReadByte()
				if err == io.EOF {
					l.buf = append(l.buf, c)
					eof = true
				} else if err != nil {
					return nil, err
				} else if e == 'N' && !quoted && len(l.buf) == start {
					null = true
				} else {
					l.buf = append(l.buf, unescape(e))
				}
			case quoted && c == l.f.enclosed:
				if l.hasPrefix([]byte{l.f.enclosed}) { // doubled quote
					_, _ = l.r.ReadByte()
					l.buf = append(l.buf, c)
					continue
				}
				quoted = false // closing quote: a terminator must follow
			default:
				l.buf = append(l.buf, c)
			}
			if eof {
				break
			}
		}
		val := l.buf[start:]
		// With ENCLOSED BY, an unenclosed NULL is SQL NULL ("NULL" in
		// quotes stays the string), as MySQL reads it.
		null = (null && len(val) == 0) || (l.f.enclosed != 0 && !enclosed && string(val) == "NULL")
		fields = append(fields, loadField{val: val, null: null})
		if endLine || eof {
			return fields, nil
		}
	}
}

// LoadData runs LOAD DATA LOCAL INFILE x with the file's content read
// from r, inserting LoadBatchRows rows per INSERT statement, each run by
// run, the session's statement runner (so under autocommit each batch
// commits on its own and memory stays bounded). As in MySQL, REPLACE
// replaces the rows a line's unique key meets (each batch a REPLACE) and
// IGNORE, which LOCAL implies, skips them with warning 1062 (each batch
// an INSERT IGNORE, which also makes a bad value a warning). The result
// counts the affected rows, and its info the lines read, the rows
// replaced and skipped and the warnings, as MySQL's; a failing batch
// stops the load with its error, earlier batches staying committed under
// autocommit.
func (e *Executor) LoadData(ctx context.Context, x *ast.LoadDataStmt, r io.Reader, env StmtEnv,
	run func(context.Context, ast.StmtNode) (*Result, error)) (*Result, error) {
	replace := x.OnDuplicate == ast.OnDuplicateKeyHandlingReplace
	ignoreDup := !replace && (x.OnDuplicate == ast.OnDuplicateKeyHandlingIgnore || x.FileLocRef == ast.FileLocClient)
	if len(x.ColumnAssignments) > 0 {
		return nil, errno.NotSupported("LOAD DATA ... SET")
	}
	f, err := newLoadFormat(x)
	if err != nil {
		return nil, err
	}
	var cols []*ast.ColumnName
	var skip []bool // field i goes to a user variable: dropped
	for _, cv := range x.ColumnsAndUserVars {
		if cv.ColumnName != nil {
			cols = append(cols, cv.ColumnName)
			skip = append(skip, false)
		} else {
			skip = append(skip, true)
		}
	}
	if len(cols) == 0 { // every column of the table, in order
		db, err := e.dbFor(ctx, env, x.Table.Schema.O)
		if err != nil {
			return nil, err
		}
		t, err := e.dom.Catalog().GetTable(ctx, db, x.Table.Name.O)
		if err != nil {
			return nil, err
		}
		for _, c := range t.Columns {
			cols = append(cols, &ast.ColumnName{Name: ast.NewCIStr(c.Name)})
			skip = append(skip, false)
		}
	}
	lr := &loadReader{r: bufio.NewReaderSize(r, 64<<10), f: f}
	var ignore uint64
	if x.IgnoreLines != nil {
		ignore = *x.IgnoreLines
	}
	total := &Result{}
	var read, deleted, skipped uint64
	var fields []loadField
	rows := make([][]ast.ExprNode, 0, LoadBatchRows)
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		ins := &ast.InsertStmt{
			Table:     &ast.TableRefsClause{TableRefs: &ast.Join{Left: &ast.TableSource{Source: x.Table}}},
			Columns:   cols,
			Lists:     rows,
			IsReplace: replace,
			IgnoreErr: ignoreDup,
		}
		res, err := run(ctx, ins)
		if err != nil {
			return err
		}
		n := uint64(len(rows))
		read += n
		switch {
		case replace && res.AffectedRows > n: // a replaced row counts twice
			deleted += res.AffectedRows - n
		case ignoreDup && res.AffectedRows < n:
			skipped += n - res.AffectedRows
		}
		total.AffectedRows += res.AffectedRows
		total.Warnings = append(total.Warnings, res.Warnings...)
		rows = rows[:0]
		return nil
	}
	var records uint64
	for {
		fields, err = lr.next(fields)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read LOAD DATA input: %w", err)
		}
		records++
		if records <= ignore {
			continue
		}
		row := make([]ast.ExprNode, 0, len(cols))
		for i, fld := range fields {
			if i >= len(skip) {
				break
			}
			if skip[i] {
				continue
			}
			if fld.null {
				row = append(row, ast.NewValueExpr(nil, "", ""))
			} else {
				row = append(row, ast.NewValueExpr(string(fld.val), "", ""))
			}
		}
		for len(row) < len(cols) { // a short line: the rest get their defaults
			row = append(row, &ast.DefaultExpr{})
		}
		rows = append(rows, row)
		if len(rows) == LoadBatchRows {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	total.Info = fmt.Sprintf("Records: %d  Deleted: %d  Skipped: %d  Warnings: %d", read, deleted, skipped, len(total.Warnings))
	return total, nil
}
