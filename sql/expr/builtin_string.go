package expr

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/types"
)

// String functions. Strings are utf8mb4 with a binary collation:
// positions and lengths count characters (bytes for binary strings),
// comparisons are bytewise.

// maxStringResult bounds results that grow with an argument (REPEAT,
// LPAD, SPACE): MySQL's max_allowed_packet default, above which the
// result is NULL.
const maxStringResult = 64 << 20

var emptyBytes = types.NewBytes([]byte{})

var stringBuiltins = map[string]builtin{
	"substring":       {2, 3, buildSubstring},
	"substr":          {2, 3, buildSubstring},
	"mid":             {3, 3, buildSubstring},
	"left":            {2, 2, buildLeftRight},
	"right":           {2, 2, buildLeftRight},
	"trim":            {1, 3, buildTrim},
	"ltrim":           {1, 1, buildTrim},
	"rtrim":           {1, 1, buildTrim},
	"replace":         {3, 3, buildReplace},
	"locate":          {2, 3, buildLocate},
	"position":        {2, 2, buildLocate},
	"instr":           {2, 2, buildLocate},
	"lpad":            {3, 3, buildPad},
	"rpad":            {3, 3, buildPad},
	"repeat":          {2, 2, buildRepeat},
	"reverse":         {1, 1, buildReverse},
	"concat_ws":       {2, -1, buildConcatWS},
	"ascii":           {1, 1, buildASCII},
	"space":           {1, 1, buildSpace},
	"strcmp":          {2, 2, buildStrcmp},
	"elt":             {2, -1, buildElt},
	"field":           {2, -1, buildField},
	"find_in_set":     {2, 2, buildFindInSet},
	"insert_func":     {4, 4, buildInsert},
	"substring_index": {3, 3, buildSubstringIndex},
	"conv":            {3, 3, buildConv},
	"quote":           {1, 1, buildQuote},
}

// binaryString reports whether ft's values are byte strings (VARBINARY,
// BLOB), whose positions count bytes.
func binaryString(ft types.FieldType) bool {
	return ft.Class() == types.ClassString && ft.Binary()
}

// strChars is the number of characters of s (bytes when bin).
func strChars(s []byte, bin bool) int {
	if bin {
		return len(s)
	}
	return utf8.RuneCount(s)
}

// charOffset is the byte offset of the n-th (0-based) character of s, or
// len(s) past its end.
func charOffset(s []byte, n int, bin bool) int {
	if bin {
		return min(n, len(s))
	}
	i := 0
	for ; n > 0 && i < len(s); n-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, w := utf8.DecodeRune(s[i:])
		i += w
	}
	return i
}

func buildSubstring(name string, args []Expr) (Expr, error) {
	bin := binaryString(args[0].Type())
	return &funcExpr{name: name, args: args, ft: strType(argFlen(args[0])), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		pos := intOf(a[1])
		n := int64(strChars(s, bin))
		switch {
		case pos < 0:
			pos += n
		case pos > 0:
			pos--
		default:
			return emptyBytes, nil
		}
		if pos < 0 || pos >= n {
			return emptyBytes, nil
		}
		end := n
		if len(a) == 3 {
			l := intOf(a[2])
			if l <= 0 {
				return emptyBytes, nil
			}
			if l < n-pos {
				end = pos + l
			}
		}
		i := charOffset(s, int(pos), bin)
		j := i + charOffset(s[i:], int(end-pos), bin)
		return types.NewBytes(s[i:j]), nil
	}}, nil
}

func buildLeftRight(name string, args []Expr) (Expr, error) {
	bin := binaryString(args[0].Type())
	right := name == "right"
	return &funcExpr{name: name, args: args, ft: strType(argFlen(args[0])), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		l := intOf(a[1])
		if l <= 0 {
			return emptyBytes, nil
		}
		if !right {
			if l >= int64(len(s)) {
				return types.NewBytes(s), nil
			}
			return types.NewBytes(s[:charOffset(s, int(l), bin)]), nil
		}
		n := int64(strChars(s, bin))
		if l >= n {
			return types.NewBytes(s), nil
		}
		return types.NewBytes(s[charOffset(s, int(n-l), bin):]), nil
	}}, nil
}

// buildTrim compiles TRIM(s), TRIM([BOTH|LEADING|TRAILING] [x] FROM s)
// (the parser gives s, x, direction), LTRIM(s) and RTRIM(s).
func buildTrim(name string, args []Expr) (Expr, error) {
	leading, trailing := name != "rtrim", name != "ltrim"
	if len(args) == 3 {
		d, ok := args[2].(*trimDirArg)
		if !ok {
			return nil, errParamCount(name)
		}
		switch d.dir {
		case ast.TrimLeading:
			trailing = false
		case ast.TrimTrailing:
			leading = false
		}
		args = args[:2]
	}
	return &funcExpr{name: name, args: args, ft: strType(argFlen(args[0])), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		cut := []byte{' '}
		if len(a) == 2 {
			cut = textOf(a[1])
		}
		if len(cut) == 0 {
			return types.NewBytes(s), nil
		}
		if leading {
			for bytes.HasPrefix(s, cut) {
				s = s[len(cut):]
			}
		}
		if trailing {
			for bytes.HasSuffix(s, cut) {
				s = s[:len(s)-len(cut)]
			}
		}
		return types.NewBytes(s), nil
	}}, nil
}

func buildReplace(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s, from := textOf(a[0]), textOf(a[1])
		if len(from) == 0 || !bytes.Contains(s, from) {
			return types.NewBytes(s), nil
		}
		return types.NewBytes(bytes.ReplaceAll(s, from, textOf(a[2]))), nil
	}}, nil
}

// buildLocate compiles LOCATE(sub, s[, pos]), POSITION(sub IN s) and
// INSTR(s, sub): the 1-based character position of sub in s, 0 if absent.
func buildLocate(name string, args []Expr) (Expr, error) {
	swap := name == "instr"
	bin := binaryString(args[0].Type()) || binaryString(args[1].Type())
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		sub, s := textOf(a[0]), textOf(a[1])
		if swap {
			sub, s = s, sub
		}
		start := int64(0)
		if len(a) == 3 {
			p := intOf(a[2])
			if p < 1 || p > int64(strChars(s, bin))+1 {
				return types.NewInt(0), nil
			}
			start = p - 1
		}
		off := charOffset(s, int(start), bin)
		i := bytes.Index(s[off:], sub)
		if i < 0 {
			return types.NewInt(0), nil
		}
		return types.NewInt(start + int64(strChars(s[off:off+i], bin)) + 1), nil
	}}, nil
}

func buildPad(name string, args []Expr) (Expr, error) {
	bin := binaryString(args[0].Type())
	left := name == "lpad"
	flen := -1
	if k, ok := args[1].(*Constant); ok && !k.fold().Value.IsNull() {
		flen = int(max(min(intOf(k.Value), maxStringResult), 0))
	}
	return &funcExpr{name: name, args: args, ft: strType(flen), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s, l, pad := textOf(a[0]), intOf(a[1]), textOf(a[2])
		if l < 0 || l > maxStringResult {
			return types.NullDatum, nil
		}
		n := int64(strChars(s, bin))
		if l <= n {
			return types.NewBytes(s[:charOffset(s, int(l), bin)]), nil
		}
		if len(pad) == 0 {
			return types.NullDatum, nil
		}
		need := l - n // characters to add
		padChars := int64(strChars(pad, bin))
		out := make([]byte, 0, len(s)+int(need/padChars+1)*len(pad))
		if !left {
			out = append(out, s...)
		}
		for ; need >= padChars; need -= padChars {
			out = append(out, pad...)
		}
		out = append(out, pad[:charOffset(pad, int(need), bin)]...)
		if left {
			out = append(out, s...)
		}
		return types.NewBytes(out), nil
	}}, nil
}

func buildRepeat(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s, n := textOf(a[0]), intOf(a[1])
		if n <= 0 || len(s) == 0 {
			return emptyBytes, nil
		}
		if n > maxStringResult/int64(len(s)) {
			return types.NullDatum, nil
		}
		return types.NewBytes(bytes.Repeat(s, int(n))), nil
	}}, nil
}

func buildReverse(name string, args []Expr) (Expr, error) {
	bin := binaryString(args[0].Type())
	return &funcExpr{name: name, args: args, ft: strType(argFlen(args[0])), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		out := make([]byte, len(s))
		for i := 0; i < len(s); {
			w := 1
			if !bin && s[i] >= utf8.RuneSelf {
				_, w = utf8.DecodeRune(s[i:])
			}
			copy(out[len(s)-i-w:], s[i:i+w])
			i += w
		}
		return types.NewBytes(out), nil
	}}, nil
}

// buildConcatWS compiles CONCAT_WS(sep, s...): NULL separator gives NULL,
// NULL strings are skipped.
func buildConcatWS(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		sep := textOf(a[0])
		out := []byte{}
		first := true
		for _, d := range a[1:] {
			if d.IsNull() {
				continue
			}
			if !first {
				out = append(out, sep...)
			}
			first = false
			out = types.AppendText(out, d, nil)
		}
		return types.NewBytes(out), nil
	}}, nil
}

func buildASCII(name string, args []Expr) (Expr, error) {
	ft := types.FieldType{Tp: mysql.TypeLong, Flen: 3, Flag: mysql.BinaryFlag}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		s := textOf(a[0])
		if len(s) == 0 {
			return types.NewInt(0), nil
		}
		return types.NewInt(int64(s[0])), nil
	}}, nil
}

func buildSpace(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		n := intOf(a[0])
		if n <= 0 {
			return emptyBytes, nil
		}
		if n > maxStringResult {
			return types.NullDatum, nil
		}
		return types.NewBytes(bytes.Repeat([]byte{' '}, int(n))), nil
	}}, nil
}

func buildStrcmp(name string, args []Expr) (Expr, error) {
	ft := types.FieldType{Tp: mysql.TypeLong, Flen: 2, Flag: mysql.BinaryFlag}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		return types.NewInt(int64(bytes.Compare(textOf(a[0]), textOf(a[1])))), nil
	}}, nil
}

// buildElt compiles ELT(n, s1, s2, ...): the n-th string, NULL when n is
// out of range.
func buildElt(name string, args []Expr) (Expr, error) {
	ts := make([]types.FieldType, 0, len(args)-1)
	for _, a := range args[1:] {
		ts = append(ts, a.Type())
	}
	ft := unify(ts)
	if ft.Class() != types.ClassString {
		ft = strType(-1)
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		n := intOf(a[0])
		if n < 1 || n >= int64(len(a)) || a[n].IsNull() {
			return types.NullDatum, nil
		}
		if a[n].Kind() == types.KindBytes {
			return a[n], nil
		}
		return types.NewBytes(textOf(a[n])), nil
	}}, nil
}

// buildField compiles FIELD(s, s1, s2, ...): the 1-based index of the
// first si equal to s, 0 if none (or s is NULL). All-string arguments
// compare as strings, anything else as numbers.
func buildField(name string, args []Expr) (Expr, error) {
	numeric := false
	for _, a := range args {
		if c := a.Type().Class(); c != types.ClassNull && c != types.ClassString {
			numeric = true
		}
	}
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NewInt(0), nil
		}
		for i, d := range a[1:] {
			if d.IsNull() {
				continue
			}
			var eq bool
			if numeric {
				eq = Compare(a[0], d, false) == 0
			} else {
				eq = bytes.Equal(textOf(a[0]), textOf(d))
			}
			if eq {
				return types.NewInt(int64(i + 1)), nil
			}
		}
		return types.NewInt(0), nil
	}}, nil
}

// buildFindInSet compiles FIND_IN_SET(s, list): the 1-based position of s
// in the comma-separated list, 0 if absent.
func buildFindInSet(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s, list := textOf(a[0]), textOf(a[1])
		if len(list) == 0 || bytes.IndexByte(s, ',') >= 0 {
			return types.NewInt(0), nil
		}
		for i := int64(1); ; i++ {
			item := list
			j := bytes.IndexByte(list, ',')
			if j >= 0 {
				item = list[:j]
			}
			if bytes.Equal(item, s) {
				return types.NewInt(i), nil
			}
			if j < 0 {
				return types.NewInt(0), nil
			}
			list = list[j+1:]
		}
	}}, nil
}

// buildInsert compiles INSERT(s, pos, len, new): s with len characters
// from pos replaced by new; s itself when pos is outside it.
func buildInsert(name string, args []Expr) (Expr, error) {
	bin := binaryString(args[0].Type())
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s, pos, l, nw := textOf(a[0]), intOf(a[1]), intOf(a[2]), textOf(a[3])
		n := int64(strChars(s, bin))
		if pos < 1 || pos > n {
			return types.NewBytes(s), nil
		}
		if l < 0 || l > n-pos+1 {
			l = n - pos + 1
		}
		i := charOffset(s, int(pos-1), bin)
		j := i + charOffset(s[i:], int(l), bin)
		out := make([]byte, 0, len(s)-(j-i)+len(nw))
		out = append(append(append(out, s[:i]...), nw...), s[j:]...)
		return types.NewBytes(out), nil
	}}, nil
}

// buildSubstringIndex is SUBSTRING_INDEX(s, delim, count): s up to the
// count-th delim from the left (count > 0), or after the -count-th from
// the right; all of s when it has fewer; ” for count 0 or an empty
// delim. Delimiters match bytewise, as MySQL's.
func buildSubstringIndex(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(argFlen(args[0])), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		s, d, n := textOf(a[0]), textOf(a[1]), intOf(a[2])
		if len(d) == 0 || n == 0 {
			return emptyBytes, nil
		}
		if n > 0 {
			i := 0
			for ; n > 0; n-- {
				j := bytes.Index(s[i:], d)
				if j < 0 {
					return types.NewBytes(s), nil
				}
				i += j + len(d)
			}
			return types.NewBytes(s[:i-len(d)]), nil
		}
		end := len(s)
		for ; n < 0; n++ {
			j := bytes.LastIndex(s[:end], d)
			if j < 0 {
				return types.NewBytes(s), nil
			}
			end = j
		}
		return types.NewBytes(s[end+len(d):]), nil
	}}, nil
}

// buildConv is CONV(n, from_base, to_base): n's text read in base
// |from_base| (a leading '-' negates, in 64-bit two's complement; reading
// stops at the first character that is no digit of the base; past 64 bits
// it is 18446744073709551615), written in base |to_base| with upper-case
// digits, signed when to_base is negative. NULL for a base outside
// [2, 36], as MySQL.
func buildConv(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(64), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		from, to := intOf(a[1]), intOf(a[2])
		fb, tb := max(from, -from), max(to, -to)
		if fb < 2 || fb > 36 || tb < 2 || tb > 36 {
			return types.NullDatum, nil
		}
		s := bytes.TrimLeft(textOf(a[0]), " ")
		neg := len(s) > 0 && s[0] == '-'
		if neg {
			s = s[1:]
		}
		var v uint64
		for _, c := range s {
			var d uint64
			switch {
			case c >= '0' && c <= '9':
				d = uint64(c - '0')
			case c >= 'a' && c <= 'z':
				d = uint64(c-'a') + 10
			case c >= 'A' && c <= 'Z':
				d = uint64(c-'A') + 10
			default:
				d = 36
			}
			if d >= uint64(fb) {
				break
			}
			if v > (math.MaxUint64-d)/uint64(fb) {
				v = math.MaxUint64
				break
			}
			v = v*uint64(fb) + d
		}
		if neg {
			v = -v
		}
		if to < 0 && int64(v) < 0 {
			return types.NewBytes(append([]byte{'-'}, bytes.ToUpper(strconv.AppendUint(nil, -v, int(tb)))...)), nil
		}
		return types.NewBytes(bytes.ToUpper(strconv.AppendUint(nil, v, int(tb)))), nil
	}}, nil
}

// buildQuote is QUOTE(s): s in single quotes with backslash, quote, NUL
// and Control-Z escaped, ready for an SQL statement; NULL gives the word
// NULL.
func buildQuote(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NewString("NULL"), nil
		}
		s := textOf(a[0])
		out := make([]byte, 0, len(s)+2)
		out = append(out, '\'')
		for _, c := range s {
			switch c {
			case '\\', '\'':
				out = append(out, '\\', c)
			case 0:
				out = append(out, '\\', '0')
			case 0x1a:
				out = append(out, '\\', 'Z')
			default:
				out = append(out, c)
			}
		}
		return types.NewBytes(append(out, '\'')), nil
	}}, nil
}
