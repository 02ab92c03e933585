package expr

import (
	"errors"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// JSON functions (MySQL 8.0). A document argument is a JSON value or a
// string parsed as JSON text (bad text: ERROR 3141); a value argument
// (JSON_OBJECT's values, JSON_SET's) is converted with types.ToJSON, so a
// string stays a JSON string. col->'$.p' is JSON_EXTRACT(col, '$.p') and
// col->>'$.p' JSON_UNQUOTE of it (the parser rewrites both).

var jsonBuiltins = map[string]builtin{
	"json_extract":        {2, -1, buildJSONExtract},
	"json_unquote":        {1, 1, buildJSONUnquote},
	"json_quote":          {1, 1, buildJSONQuote},
	"json_object":         {0, -1, buildJSONObject},
	"json_array":          {0, -1, buildJSONArray},
	"json_set":            {3, -1, buildJSONSet},
	"json_insert":         {3, -1, buildJSONSet},
	"json_replace":        {3, -1, buildJSONSet},
	"json_remove":         {2, -1, buildJSONRemove},
	"json_contains":       {2, 3, buildJSONContains},
	"json_contains_path":  {3, -1, buildJSONContainsPath},
	"json_keys":           {1, 2, buildJSONKeys},
	"json_length":         {1, 2, buildJSONLength},
	"json_depth":          {1, 1, buildJSONDepth},
	"json_valid":          {1, 1, buildJSONValid},
	"json_type":           {1, 1, buildJSONType},
	"json_merge_patch":    {2, -1, buildJSONMerge},
	"json_merge_preserve": {2, -1, buildJSONMerge},
	"json_merge":          {2, -1, buildJSONMerge},
	"json_memberof":       {2, 2, buildMemberOf},
	"json_array_append":   {3, -1, buildJSONSet},
	"json_array_insert":   {3, -1, buildJSONSet},
	"json_overlaps":       {2, 2, buildJSONOverlaps},
	"json_pretty":         {1, 1, buildJSONPretty},
}

var (
	jsonT     = types.JSONType
	longTextT = types.FieldType{Tp: mysql.TypeLongBlob, Flen: 4294967295}
)

// jsonArgError is ERROR 3141 for bad JSON text in argument pos (1-based)
// of fn, or err itself (3157 too deep).
func jsonArgError(fn string, pos int, err error) error {
	var se *types.JSONSyntaxError
	if errors.As(err, &se) {
		return errno.New(3141, "Invalid JSON text in argument %d to function %s: \"%s\" at position %d.", pos, fn, se.Msg, se.Pos)
	}
	return err
}

// jsonDoc reads document argument pos (1-based) of fn: a JSON value, or a
// string parsed as JSON; null is false for SQL NULL.
func jsonDoc(fn string, pos int, d types.Datum) (types.JSON, bool, error) {
	switch d.Kind() {
	case types.KindNull, types.KindAbsent:
		return types.JSON{}, false, nil
	case types.KindJSON:
		return d.JSON(), true, nil
	case types.KindBytes:
		j, err := types.ParseJSON(d.Bytes())
		if err != nil {
			return j, false, jsonArgError(fn, pos, err)
		}
		return j, true, nil
	}
	return types.JSON{}, false, errno.New(3146, "Invalid data type for JSON data in argument %d to function %s; a JSON string or JSON type is required.", pos, fn)
}

// jsonPath reads a path argument; NULL is ok=false.
func jsonPath(d types.Datum) (types.JSONPath, bool, error) {
	if d.IsNull() {
		return types.JSONPath{}, false, nil
	}
	p, err := types.ParseJSONPath(textOf(d))
	return p, err == nil, err
}

// jsonValue converts value argument d of static type ft to JSON.
func jsonValue(d types.Datum, ft types.FieldType) types.JSON {
	return types.ToJSON(d, ft)
}

func jsonDatum(j types.JSON) (types.Datum, error) {
	if err := types.CheckJSONDepth(j); err != nil {
		return types.NullDatum, err
	}
	return types.NewJSONDatum(j), nil
}

// jsonFunc is a funcExpr whose fn gets the argument types too.
func jsonFunc(name string, args []Expr, ft types.FieldType, fn func(a []types.Datum, ts []types.FieldType) (types.Datum, error)) Expr {
	ts := make([]types.FieldType, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) { return fn(a, ts) }}
}

func buildJSONExtract(name string, args []Expr) (Expr, error) {
	return jsonFunc(name, args, jsonT, func(a []types.Datum, _ []types.FieldType) (types.Datum, error) {
		doc, ok, err := jsonDoc(name, 1, a[0])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		var found []types.JSON
		wrap := len(a) > 2
		for _, pd := range a[1:] {
			p, ok, err := jsonPath(pd)
			if err != nil || !ok {
				return types.NullDatum, err
			}
			wrap = wrap || p.Wild()
			found = append(found, p.Extract(doc)...)
		}
		switch {
		case len(found) == 0:
			return types.NullDatum, nil
		case !wrap:
			return types.NewJSONDatum(found[0]), nil
		}
		return types.NewJSONDatum(types.JSONArrayOf(found)), nil
	}), nil
}

func buildJSONUnquote(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: longTextT, fn: func(a []types.Datum) (types.Datum, error) {
		switch a[0].Kind() {
		case types.KindNull, types.KindAbsent:
			return types.NullDatum, nil
		case types.KindJSON:
			return types.NewBytes(a[0].JSON().Unquoted()), nil
		}
		s := textOf(a[0])
		if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
			return types.NewBytes(s), nil
		}
		j, err := types.ParseJSON(s)
		if err != nil {
			return types.NullDatum, jsonArgError(name, 1, err)
		}
		return types.NewBytes(j.Unquoted()), nil
	}}, nil
}

func buildJSONQuote(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: longTextT, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		return types.NewBytes(types.QuoteJSON(textOf(a[0]))), nil
	}}, nil
}

func buildJSONObject(name string, args []Expr) (Expr, error) {
	if len(args)%2 != 0 {
		return nil, errParamCount(name)
	}
	return jsonFunc(name, args, jsonT, func(a []types.Datum, ts []types.FieldType) (types.Datum, error) {
		var b types.JSONObjectBuilder
		for i := 0; i < len(a); i += 2 {
			if a[i].IsNull() {
				return types.NullDatum, errno.New(3158, "JSON documents may not contain NULL member names.")
			}
			k := textOf(a[i])
			if a[i].Kind() == types.KindJSON {
				k = a[i].JSON().Unquoted()
			}
			if len(k) > 65535 {
				return types.NullDatum, errno.New(3151, "The JSON object contains a key name that is too long.")
			}
			b.Add(k, jsonValue(a[i+1], ts[i+1]))
		}
		return jsonDatum(b.Build())
	}), nil
}

func buildJSONArray(name string, args []Expr) (Expr, error) {
	return jsonFunc(name, args, jsonT, func(a []types.Datum, ts []types.FieldType) (types.Datum, error) {
		vals := make([]types.JSON, len(a))
		for i, d := range a {
			vals[i] = jsonValue(d, ts[i])
		}
		return jsonDatum(types.JSONArrayOf(vals))
	}), nil
}

// buildJSONSet compiles the functions that change a document at (path,
// value) pairs: JSON_SET, JSON_INSERT, JSON_REPLACE, JSON_ARRAY_APPEND
// and JSON_ARRAY_INSERT.
func buildJSONSet(name string, args []Expr) (Expr, error) {
	if len(args)%2 != 1 {
		return nil, errParamCount(name)
	}
	change := func(doc types.JSON, paths []types.JSONPath, vals []types.JSON) (types.JSON, error) {
		switch name {
		case "json_array_append":
			return types.JSONArrayAppend(doc, paths, vals)
		case "json_array_insert":
			return types.JSONArrayInsert(doc, paths, vals)
		}
		mode := map[string]types.JSONModify{"json_set": types.JSONModifySet, "json_insert": types.JSONModifyInsert, "json_replace": types.JSONModifyReplace}[name]
		return types.JSONSet(doc, paths, vals, mode)
	}
	return jsonFunc(name, args, jsonT, func(a []types.Datum, ts []types.FieldType) (types.Datum, error) {
		doc, ok, err := jsonDoc(name, 1, a[0])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		var paths []types.JSONPath
		var vals []types.JSON
		for i := 1; i < len(a); i += 2 {
			p, ok, err := jsonPath(a[i])
			if err != nil || !ok {
				return types.NullDatum, err
			}
			paths = append(paths, p)
			vals = append(vals, jsonValue(a[i+1], ts[i+1]))
		}
		j, err := change(doc, paths, vals)
		if err != nil {
			return types.NullDatum, err
		}
		return jsonDatum(j)
	}), nil
}

// jsonDocPaths reads a document and the paths after it; ok is false when
// one of them is NULL.
func jsonDocPaths(name string, a []types.Datum) (types.JSON, []types.JSONPath, bool, error) {
	doc, ok, err := jsonDoc(name, 1, a[0])
	if err != nil || !ok {
		return doc, nil, false, err
	}
	paths := make([]types.JSONPath, 0, len(a)-1)
	for _, pd := range a[1:] {
		p, ok, err := jsonPath(pd)
		if err != nil || !ok {
			return doc, nil, false, err
		}
		paths = append(paths, p)
	}
	return doc, paths, true, nil
}

func buildJSONRemove(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: jsonT, fn: func(a []types.Datum) (types.Datum, error) {
		doc, paths, ok, err := jsonDocPaths(name, a)
		if err != nil || !ok {
			return types.NullDatum, err
		}
		j, err := types.JSONRemove(doc, paths)
		if err != nil {
			return types.NullDatum, err
		}
		return types.NewJSONDatum(j), nil
	}}, nil
}

// jsonAt is the one value path (a path without wildcards, ERROR 3149
// otherwise) selects in doc; found is false when it selects none.
func jsonAt(doc types.JSON, p types.JSONPath) (types.JSON, bool, error) {
	if p.Wild() {
		return doc, false, types.ErrJSONPathWildcard
	}
	m := p.Extract(doc)
	if len(m) == 0 {
		return doc, false, nil
	}
	return m[0], true, nil
}

// jsonOptionalPath reads JSON_CONTAINS / JSON_KEYS / JSON_LENGTH's
// document and optional path (argument pathAt) and returns the value the
// path selects; ok is false for NULL (an argument, or nothing selected).
func jsonOptionalPath(name string, a []types.Datum, docAt, pathAt int) (types.JSON, bool, error) {
	doc, ok, err := jsonDoc(name, docAt+1, a[docAt])
	if err != nil || !ok || len(a) <= pathAt {
		return doc, ok, err
	}
	p, ok, err := jsonPath(a[pathAt])
	if err != nil || !ok {
		return doc, false, err
	}
	return jsonAt(doc, p)
}

func buildJSONContains(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		target, ok, err := jsonOptionalPath(name, a, 0, 2)
		if err != nil || !ok {
			return types.NullDatum, err
		}
		cand, ok, err := jsonDoc(name, 2, a[1])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		return boolDatum(types.JSONContains(target, cand)), nil
	}}, nil
}

func buildJSONContainsPath(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if a[1].IsNull() {
			return types.NullDatum, nil
		}
		mode := strings.ToLower(string(textOf(a[1])))
		if mode != "one" && mode != "all" {
			return types.NullDatum, errno.New(3154, "The oneOrAll argument to json_contains_path may take these values: 'one' or 'all'.")
		}
		doc, paths, ok, err := jsonDocPaths(name, append([]types.Datum{a[0]}, a[2:]...))
		if err != nil || !ok {
			return types.NullDatum, err
		}
		for _, p := range paths {
			found := len(p.Extract(doc)) > 0
			if found && mode == "one" {
				return trueD, nil
			}
			if !found && mode == "all" {
				return falseD, nil
			}
		}
		return boolDatum(mode == "all"), nil
	}}, nil
}

func buildJSONKeys(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: jsonT, fn: func(a []types.Datum) (types.Datum, error) {
		j, ok, err := jsonOptionalPath(name, a, 0, 1)
		if err != nil || !ok || j.Tp != types.JSONObject {
			return types.NullDatum, err
		}
		keys := make([]types.JSON, j.Count())
		for i := range keys {
			keys[i] = types.JSONFromString(j.ObjectKey(i))
		}
		return types.NewJSONDatum(types.JSONArrayOf(keys)), nil
	}}, nil
}

func buildJSONLength(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		j, ok, err := jsonOptionalPath(name, a, 0, 1)
		if err != nil || !ok {
			return types.NullDatum, err
		}
		if j.Tp == types.JSONArray || j.Tp == types.JSONObject {
			return types.NewInt(int64(j.Count())), nil
		}
		return types.NewInt(1), nil
	}}, nil
}

func buildJSONDepth(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		j, ok, err := jsonDoc(name, 1, a[0])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		return types.NewInt(int64(j.Depth())), nil
	}}, nil
}

func buildJSONValid(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		switch a[0].Kind() {
		case types.KindNull, types.KindAbsent:
			return types.NullDatum, nil
		case types.KindJSON:
			return trueD, nil
		case types.KindBytes:
			return boolDatum(types.ValidJSON(a[0].Bytes())), nil
		}
		return falseD, nil
	}}, nil
}

func buildJSONType(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(16), fn: func(a []types.Datum) (types.Datum, error) {
		j, ok, err := jsonDoc(name, 1, a[0])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		return types.NewString(j.TypeName()), nil
	}}, nil
}

func buildJSONMerge(name string, args []Expr) (Expr, error) {
	merge := types.JSONMergePreserve
	if name == "json_merge_patch" {
		merge = types.JSONMergePatch
	}
	return &funcExpr{name: name, args: args, ft: jsonT, fn: func(a []types.Datum) (types.Datum, error) {
		docs := make([]types.JSON, len(a))
		for i, d := range a {
			j, ok, err := jsonDoc(name, i+1, d)
			if err != nil || !ok {
				return types.NullDatum, err
			}
			docs[i] = j
		}
		return jsonDatum(merge(docs))
	}}, nil
}

// buildMemberOf is `value MEMBER OF (json_array)`: whether value (a SQL
// value converted to JSON; a string is a JSON string) equals an element
// of the array, or the document itself when it is no array.
func buildMemberOf(name string, args []Expr) (Expr, error) {
	return jsonFunc(name, args, types.Int64Type, func(a []types.Datum, ts []types.FieldType) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		doc, ok, err := jsonDoc("member of", 2, a[1])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		v := jsonValue(a[0], ts[0])
		if doc.Tp != types.JSONArray {
			return boolDatum(types.CompareJSON(doc, v) == 0), nil
		}
		for i := range doc.Count() {
			if types.CompareJSON(doc.ArrayElem(i), v) == 0 {
				return trueD, nil
			}
		}
		return falseD, nil
	}), nil
}

// jsonValueExpr converts its operand to JSON (a comparison of a JSON value
// with a SQL value compares both as JSON, as MySQL does).
type jsonValueExpr struct{ e Expr }

func (e *jsonValueExpr) Type() types.FieldType { return jsonT }

func (e *jsonValueExpr) Eval(row []types.Datum) (types.Datum, error) {
	d, err := e.e.Eval(row)
	if err != nil || d.IsNull() || d.Kind() == types.KindJSON {
		return d, err
	}
	return types.NewJSONDatum(jsonValue(d, e.e.Type())), nil
}

// isJSON reports whether ft is JSON.
func isJSON(ft types.FieldType) bool { return ft.Tp == mysql.TypeJSON }

// jsonOperands makes a comparison of a JSON operand with a non-JSON one
// compare as JSON.
func jsonOperands(l, r Expr) (Expr, Expr) {
	lj, rj := isJSON(l.Type()), isJSON(r.Type())
	switch {
	case lj && !rj && r.Type().Class() != types.ClassNull:
		r = &jsonValueExpr{e: r}
	case rj && !lj && l.Type().Class() != types.ClassNull:
		l = &jsonValueExpr{e: l}
	}
	return l, r
}

// castToJSON is CAST(e AS JSON): a string is parsed as JSON text, any
// other value converted (types.ToJSON).
func castToJSON(e Expr) Expr {
	ft := e.Type()
	parse := ft.Class() == types.ClassString && !isJSON(ft) && ft.Tp != mysql.TypeEnum && ft.Tp != mysql.TypeSet
	return &funcExpr{name: "cast", args: []Expr{e}, ft: jsonT, fn: func(a []types.Datum) (types.Datum, error) {
		d := a[0]
		switch {
		case d.IsNull() || d.Kind() == types.KindJSON:
			return d, nil
		case parse && d.Kind() == types.KindBytes:
			j, err := types.ParseJSON(d.Bytes())
			if err != nil {
				return types.NullDatum, jsonArgError("cast_as_json", 1, err)
			}
			return types.NewJSONDatum(j), nil
		}
		return types.NewJSONDatum(jsonValue(d, ft)), nil
	}}
}

func buildJSONOverlaps(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		var docs [2]types.JSON
		for i := range docs {
			j, ok, err := jsonDoc(name, i+1, a[i])
			if err != nil || !ok {
				return types.NullDatum, err
			}
			docs[i] = j
		}
		return boolDatum(types.JSONOverlaps(docs[0], docs[1])), nil
	}}, nil
}

func buildJSONPretty(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: longTextT, fn: func(a []types.Datum) (types.Datum, error) {
		j, ok, err := jsonDoc(name, 1, a[0])
		if err != nil || !ok {
			return types.NullDatum, err
		}
		return types.NewBytes(j.AppendPretty(nil, 0)), nil
	}}, nil
}
