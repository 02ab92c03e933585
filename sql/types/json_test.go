package types

import (
	"cmp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{`1`, `1`},
		{` -12 `, `-12`},
		{`18446744073709551615`, `18446744073709551615`},
		{`1.5`, `1.5`},
		{`1e2`, `100.0`},
		{`1.0`, `1.0`},
		{`1e20`, `1e20`},
		{`-0.25`, `-0.25`},
		{`true`, `true`},
		{`false`, `false`},
		{`null`, `null`},
		{`"a\"b\\c\n\u00e9\u0001/\/"`, `"a\"b\\c\né\u0001//"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`[1,2,[3,{"a":null}]]`, `[1, 2, [3, {"a": null}]]`},
		{`{"b":1,"a":2,"aa":3,"c":{"y":1,"x":[]}}`, `{"a": 2, "b": 1, "c": {"x": [], "y": 1}, "aa": 3}`},
		{`{"a":1,"a":2}`, `{"a": 2}`},
		{`{"a":1} `, `{"a": 1}`},
	} {
		j, err := ParseJSON([]byte(tc.in))
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.out, j.String(), tc.in)
		// The datum form is the same value, and its text parses back.
		d := NewJSONDatum(j)
		require.Equal(t, tc.out, d.String())
		j2, err := ParseJSON([]byte(tc.out))
		require.NoError(t, err)
		require.Equal(t, 0, CompareJSON(j, j2), tc.in)
		require.Equal(t, d.Bytes(), NewJSONDatum(j2).Bytes(), tc.in)
	}
}

func TestJSONParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in, msg string
		pos     int
	}{
		{``, "The document is empty.", 0},
		{`   `, "The document is empty.", 3},
		{`abc`, "Invalid value.", 0},
		{`{"a":1`, "Missing a comma or '}' after an object member.", 6},
		{`{"a" 1}`, "Missing a colon after a name of object member.", 5},
		{`{a:1}`, "Missing a name for object member.", 1},
		{`[1 2]`, "Missing a comma or ']' after an array element.", 3},
		{`[1,]`, "Invalid value.", 3},
		{`"abc`, "Missing a closing quotation mark in string.", 0},
		{`"\x"`, "Invalid escape character in string.", 1},
		{`"\u12g4"`, "Incorrect hex digit after \\u escape in string.", 3},
		{`1 2`, "The document root must not be followed by other values.", 2},
		{`1.`, "Miss fraction part in number.", 2},
		{`1e`, "Miss exponent in number.", 2},
		{`-`, "Invalid value.", 1},
		{`1e999`, "Number too big to be stored in double.", 0},
		{"\"\xff\"", "Invalid encoding in string.", 1},
	} {
		_, err := ParseJSON([]byte(tc.in))
		var se *JSONSyntaxError
		require.ErrorAs(t, err, &se, tc.in)
		require.Equal(t, tc.msg, se.Msg, tc.in)
		require.Equal(t, tc.pos, se.Pos, tc.in)
	}
	deep := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	_, err := ParseJSON([]byte(deep))
	require.NoError(t, err)
	_, err = ParseJSON([]byte("[" + deep + "]"))
	require.ErrorIs(t, err, ErrJSONTooDeep)
	_, err = ParseJSON([]byte(strings.Repeat(`{"a":`, 100000)))
	require.ErrorIs(t, err, ErrJSONTooDeep)
}

func mustJSON(t *testing.T, s string) JSON {
	j, err := ParseJSON([]byte(s))
	require.NoError(t, err, s)
	return j
}

func TestJSONPathExtract(t *testing.T) {
	doc := mustJSON(t, `{"a": [1, 2, {"b": 3}], "c": {"b": 4}, "d e": 5, "x": 7}`)
	for _, tc := range []struct{ path, out string }{
		{`$`, `[{"a": [1, 2, {"b": 3}], "c": {"b": 4}, "x": 7, "d e": 5}]`},
		{`$.a[1]`, `[2]`},
		{`$.a[last]`, `[{"b": 3}]`},
		{`$.a[last-1]`, `[2]`},
		{`$.a[0 to 1]`, `[1, 2]`},
		{`$.a[*]`, `[1, 2, {"b": 3}]`},
		{`$."d e"`, `[5]`},
		{`$.*`, `[[1, 2, {"b": 3}], {"b": 4}, 7, 5]`},
		{`$**.b`, `[3, 4]`},
		{`$.x[0]`, `[7]`},
		{`$.x[1]`, `[]`},
		{`$.nope`, `[]`},
		{` $ . a [ 0 ] `, `[1]`},
	} {
		p, err := ParseJSONPath([]byte(tc.path))
		require.NoError(t, err, tc.path)
		require.Equal(t, tc.out, JSONArrayOf(p.Extract(doc)).String(), tc.path)
	}
	for _, tc := range []struct {
		path string
		pos  int
	}{{`a`, 0}, {`$a`, 1}, {`$.`, 2}, {`$[`, 2}, {`$[x]`, 2}, {`$**`, 3}, {`$.a[1`, 5}, {``, 0}, {`$."a`, 2}, {`$.1a`, 2}} {
		_, err := ParseJSONPath([]byte(tc.path))
		require.Error(t, err, tc.path)
		require.Contains(t, err.Error(), "around character position "+itoa(tc.pos)+".", tc.path)
	}
}

func itoa(n int) string { return NewInt(int64(n)).String() }

func TestJSONModify(t *testing.T) {
	doc := `{"a": 1, "b": [2, 3]}`
	path := func(s string) JSONPath {
		p, err := ParseJSONPath([]byte(s))
		require.NoError(t, err)
		return p
	}
	for _, tc := range []struct {
		mode  JSONModify
		path  string
		value string
		out   string
	}{
		{JSONModifySet, `$.a`, `10`, `{"a": 10, "b": [2, 3]}`},
		{JSONModifySet, `$.c`, `"x"`, `{"a": 1, "b": [2, 3], "c": "x"}`},
		{JSONModifyInsert, `$.a`, `10`, `{"a": 1, "b": [2, 3]}`},
		{JSONModifyInsert, `$.b[5]`, `4`, `{"a": 1, "b": [2, 3, 4]}`},
		{JSONModifyReplace, `$.c`, `4`, `{"a": 1, "b": [2, 3]}`},
		{JSONModifyReplace, `$.b[0]`, `[]`, `{"a": 1, "b": [[], 3]}`},
		{JSONModifySet, `$.a[1]`, `true`, `{"a": [1, true], "b": [2, 3]}`},
		{JSONModifySet, `$.a[0]`, `true`, `{"a": true, "b": [2, 3]}`},
		{JSONModifySet, `$`, `1`, `1`},
		{JSONModifySet, `$.x.y`, `1`, doc},
	} {
		j, err := JSONSet(mustJSON(t, doc), []JSONPath{path(tc.path)}, []JSON{mustJSON(t, tc.value)}, tc.mode)
		require.NoError(t, err)
		require.Equal(t, tc.out, j.String(), tc.path)
	}
	_, err := JSONSet(mustJSON(t, doc), []JSONPath{path(`$.*`)}, []JSON{JSONNull}, JSONModifySet)
	require.ErrorIs(t, err, ErrJSONPathWildcard)
	j, err := JSONRemove(mustJSON(t, doc), []JSONPath{path(`$.b[0]`), path(`$.a`), path(`$.zz`)})
	require.NoError(t, err)
	require.Equal(t, `{"b": [3]}`, j.String())
	_, err = JSONRemove(mustJSON(t, doc), []JSONPath{path(`$`)})
	require.ErrorIs(t, err, ErrJSONVacuousPath)

	merge := func(f func([]JSON) JSON, docs ...string) string {
		js := make([]JSON, len(docs))
		for i, d := range docs {
			js[i] = mustJSON(t, d)
		}
		return f(js).String()
	}
	require.Equal(t, `[1, 2, true, false]`, merge(JSONMergePreserve, `[1, 2]`, `[true, false]`))
	require.Equal(t, `{"id": 47, "name": "x"}`, merge(JSONMergePreserve, `{"name": "x"}`, `{"id": 47}`))
	require.Equal(t, `[1, true]`, merge(JSONMergePreserve, `1`, `true`))
	require.Equal(t, `[1, 2, {"id": 47}]`, merge(JSONMergePreserve, `[1, 2]`, `{"id": 47}`))
	require.Equal(t, `{"a": [1, 4], "b": 2, "c": 5}`, merge(JSONMergePreserve, `{"a": 1, "b": 2}`, `{"c": 5, "a": 4}`))
	require.Equal(t, `{"a": 3, "b": 2, "c": 4}`, merge(JSONMergePatch, `{"a": 1, "b": 2}`, `{"a": 3, "c": 4}`))
	require.Equal(t, `{"a": 5, "b": 2, "c": 4, "d": 6}`, merge(JSONMergePatch, `{"a": 1, "b": 2}`, `{"a": 3, "c": 4}`, `{"a": 5, "d": 6}`))
	require.Equal(t, `{"a": 1}`, merge(JSONMergePatch, `{"a": 1, "b": 2}`, `{"b": null}`))
	require.Equal(t, `true`, merge(JSONMergePatch, `[1, 2]`, `true`))
	require.Equal(t, `{"id": 47}`, merge(JSONMergePatch, `[1, 2]`, `{"id": 47}`))
	require.Equal(t, `{"a": {"x": 1, "y": 2}}`, merge(JSONMergePatch, `{"a": {"x": 1}}`, `{"a": {"y": 2}}`))
}

func TestJSONCompareContains(t *testing.T) {
	order := []string{`null`, `-1`, `1`, `1.5`, `2`, `18446744073709551615`, `""`, `"a"`, `"b"`, `{}`, `{"a": 1}`, `[]`, `[1]`, `[1, 2]`, `[2]`, `false`, `true`}
	for i := range order {
		for k := range order {
			c := CompareJSON(mustJSON(t, order[i]), mustJSON(t, order[k]))
			require.Equal(t, cmp.Compare(i, k), c, "%s vs %s", order[i], order[k])
		}
	}
	require.Equal(t, 0, CompareJSON(mustJSON(t, `1`), mustJSON(t, `1.0`)))
	require.Equal(t, 0, CompareJSON(mustJSON(t, `{"a": 1, "b": [2]}`), mustJSON(t, `{"b": [2.0], "a": 1}`)))
	for _, tc := range []struct {
		target, cand string
		want         bool
	}{
		{`{"a": 1, "b": 2, "c": {"d": 4}}`, `1`, false},
		{`{"a": 1, "b": 2, "c": {"d": 4}}`, `{"a": 1}`, true},
		{`{"a": 1, "b": 2, "c": {"d": 4}}`, `{"c": {"d": 4}}`, true},
		{`[1, 2, [3, 4]]`, `[1, 3]`, true},
		{`[1, 2, [3, 4]]`, `[1, 5]`, false},
		{`[1, 2, {"x": 1}]`, `{"x": 1}`, true},
		{`1`, `1.0`, true},
		{`"a"`, `["a"]`, false},
	} {
		require.Equal(t, tc.want, JSONContains(mustJSON(t, tc.target), mustJSON(t, tc.cand)), "%s in %s", tc.cand, tc.target)
	}
}

// FuzzJSON: no text and no path makes the parser, the path parser or the
// operations on what they accept panic; accepted text prints as text that
// parses back to an equal value.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, {"b": null}], "c": "x"}`, `[[[]]]`, `"\u00e9\ud83d\ude00"`, `1e308`, `-0`, `{"":{"":""}}`, `[1,`, `{"a"`, `"\`, `$`} {
		f.Add(s, `$.a[0]`)
		f.Add(s, `$**.b`)
	}
	f.Add(`[1, 2, 3]`, `$[last-1 to last]`)
	f.Add(`{"a": 1}`, `$."a`)
	f.Fuzz(checkJSONOps)
}

// checkJSONOps parses text and path and, when they are accepted, checks
// that the text prints back to an equal value and runs the operations on
// them (a panic fails the test).
func checkJSONOps(t *testing.T, text, path string) {
	j, err := ParseJSON([]byte(text))
	if err != nil {
		return
	}
	back, err := ParseJSON(j.AppendText(nil))
	require.NoError(t, err, text)
	require.Equal(t, 0, CompareJSON(j, back), text)
	_ = j.Depth()
	_ = j.AppendPretty(nil, 0)
	_ = JSONMergePreserve([]JSON{j, j})
	_ = JSONMergePatch([]JSON{j, j})
	p, err := ParseJSONPath([]byte(path))
	if err != nil {
		return
	}
	for _, v := range p.Extract(j) {
		_ = JSONContains(j, v)
		_ = JSONOverlaps(j, v)
	}
	if !p.Wild() {
		_, _ = JSONSet(j, []JSONPath{p}, []JSON{j}, JSONModifySet)
		_, _ = JSONRemove(j, []JSONPath{p})
		_, _ = JSONArrayAppend(j, []JSONPath{p}, []JSON{j})
		_, _ = JSONArrayInsert(j, []JSONPath{p}, []JSON{j})
	}
}

// TestJSONMutations feeds many byte-level mutations of valid documents and
// paths through checkJSONOps without the fuzzing engine.
func TestJSONMutations(t *testing.T) {
	docs := []string{`{"a": [1, {"b": null}], "c": "x\n", "dd": [true, false, 1.5e3]}`, `[[1], [2, [3]]]`}
	paths := []string{`$.a[1].b`, `$**.b`, `$[1][last]`, `$."c"`, `$.*[0 to 1]`}
	r := uint64(1)
	next := func(n int) int {
		r = r*6364136223846793005 + 1442695040888963407
		return int(r>>33) % n
	}
	const alphabet = "{}[]\",:\\ .$*0123456789abelnrstu-+eE\x00\xff"
	mutate := func(s string) string {
		b := []byte(s)
		for range 1 + next(3) {
			i := next(len(b) + 1)
			switch next(3) {
			case 0:
				b = append(b[:i], append([]byte{alphabet[next(len(alphabet))]}, b[i:]...)...)
			case 1:
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			default:
				if i < len(b) {
					b[i] = alphabet[next(len(alphabet))]
				}
			}
		}
		return string(b)
	}
	for range 20000 {
		checkJSONOps(t, mutate(docs[next(len(docs))]), mutate(paths[next(len(paths))]))
	}
}
