package expr

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// Regular expressions: expr [NOT] REGEXP / RLIKE pat, REGEXP_LIKE,
// REGEXP_INSTR, REGEXP_SUBSTR and REGEXP_REPLACE, on Go's regexp (RE2)
// where MySQL 8.0 uses ICU. Matching is case-sensitive by default because
// Strata compares strings as utf8mb4_bin (MySQL too is case-sensitive
// under a binary or _bin collation; under its default utf8mb4_0900_ai_ci
// it is not); the match_type letters c, i, m, n and u are MySQL's.
// Differences from ICU:
//
//   - RE2 has no backreferences (\1) and no lookaround ((?=...), (?<=...)):
//     such patterns are ERROR 3685 instead of matching.
//   - Possessive quantifiers (a*+) and atomic groups are not supported.
//   - A replacement string takes $N (a group number) and \c (c itself)
//     like ICU; a '$' not followed by a digit is kept as is where ICU
//     fails.
//   - Pattern error codes are approximations: mismatched parentheses are
//     3691 and a missing ']' 3696 as in MySQL, every other syntax error
//     3685 (ICU reports finer ones).
//
// Positions and lengths count characters (bytes for binary strings), as
// the string functions do.

var regexpBuiltins = map[string]builtin{
	"regexp_like":    {2, 3, buildRegexpLike},
	"regexp_instr":   {2, 6, buildRegexpInstr},
	"regexp_substr":  {2, 5, buildRegexpSubstr},
	"regexp_replace": {3, 6, buildRegexpReplace},
}

// errRegexpArg is ICU's U_ILLEGAL_ARGUMENT_ERROR: an empty pattern, a bad
// match type, an unsupported construct.
func errRegexpArg() error {
	return errno.New(3685, "Illegal argument to a regular expression.")
}

// errRegexpIndex is a start position outside the subject.
func errRegexpIndex() error {
	return errno.New(3686, "Index out of bounds in regular expression search.")
}

// regexpFlags turns a match_type into RE2 flags; the last of c and i
// wins.
func regexpFlags(mt []byte) (string, error) {
	ci, multi, dotAll := false, false, false
	for _, c := range mt {
		switch c {
		case 'c':
			ci = false
		case 'i':
			ci = true
		case 'm':
			multi = true
		case 'n':
			dotAll = true
		case 'u': // Unix line endings only: RE2 knows no others
		default:
			return "", errRegexpArg()
		}
	}
	var f strings.Builder
	for _, x := range []struct {
		on bool
		c  byte
	}{{ci, 'i'}, {multi, 'm'}, {dotAll, 's'}} {
		if x.on {
			f.WriteByte(x.c)
		}
	}
	if f.Len() == 0 {
		return "", nil
	}
	return "(?" + f.String() + ")", nil
}

// compileRegexp compiles pat with the match type mt.
func compileRegexp(pat, mt []byte) (*regexp.Regexp, error) {
	if len(pat) == 0 {
		return nil, errRegexpArg()
	}
	flags, err := regexpFlags(mt)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(flags + string(pat))
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			switch se.Code {
			case syntax.ErrMissingParen, syntax.ErrUnexpectedParen:
				return nil, errno.New(3691, "Mismatched parenthesis in regular expression.")
			case syntax.ErrMissingBracket:
				return nil, errno.New(3696, "Missing closing bracket in regular expression.")
			}
		}
		return nil, errRegexpArg()
	}
	return re, nil
}

// regexpArgs is the pattern and match type of a call: compiled once when
// both are constants, else per row (the last one kept).
type regexpArgs struct {
	patIdx, mtIdx int // argument positions (mtIdx < 0: none)
	fixed         *regexp.Regexp

	bin bool // the subject is a binary string: positions count bytes

	mu              sync.Mutex
	lastPat, lastMT string
	last            *regexp.Regexp
}

func newRegexpArgs(args []Expr, patIdx, mtIdx int) (*regexpArgs, error) {
	r := &regexpArgs{patIdx: patIdx, mtIdx: mtIdx, bin: binaryString(args[0].Type())}
	p, ok := args[patIdx].(*Constant)
	if !ok || p.fold().Value.IsNull() {
		return r, nil
	}
	var mt []byte
	if mtIdx >= 0 && mtIdx < len(args) {
		k, ok := args[mtIdx].(*Constant)
		if !ok || k.fold().Value.IsNull() {
			return r, nil
		}
		mt = textOf(k.Value)
	}
	re, err := compileRegexp(textOf(p.Value), mt)
	if err != nil {
		return nil, err
	}
	r.fixed = re
	return r, nil
}

// get returns the regexp of a row's arguments a (none is NULL).
func (r *regexpArgs) get(a []types.Datum) (*regexp.Regexp, error) {
	if r.fixed != nil {
		return r.fixed, nil
	}
	pat := textOf(a[r.patIdx])
	var mt []byte
	if r.mtIdx >= 0 && r.mtIdx < len(a) {
		mt = textOf(a[r.mtIdx])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && r.lastPat == string(pat) && r.lastMT == string(mt) {
		return r.last, nil
	}
	re, err := compileRegexp(pat, mt)
	if err != nil {
		return nil, err
	}
	r.last, r.lastPat, r.lastMT = re, string(pat), string(mt)
	return re, nil
}

// compileRegexpOp compiles expr [NOT] REGEXP pat (and RLIKE).
func (c *Ctx) compileRegexpOp(x *ast.PatternRegexpExpr) (Expr, error) {
	e, p, err := compilePair(x.Expr, x.Pattern, c)
	if err != nil {
		return nil, err
	}
	loc := TimestampZone(c.Env)
	like, err := buildRegexpLike("regexp", []Expr{localTimestamp(e, loc), localTimestamp(p, loc)})
	if err != nil || !x.Not {
		return like, err
	}
	return &notExpr{e: like}, nil
}

// buildRegexpLike compiles REGEXP_LIKE(expr, pat[, match_type]): 1 when
// pat matches somewhere in expr.
func buildRegexpLike(name string, args []Expr) (Expr, error) {
	ra, err := newRegexpArgs(args, 1, 2)
	if err != nil {
		return nil, err
	}
	return &funcExpr{name: name, args: args, ft: boolT, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		re, err := ra.get(a)
		if err != nil {
			return types.NullDatum, err
		}
		return boolDatum(re.Match(textOf(a[0]))), nil
	}}, nil
}

// subject returns a row's regexp, subject text (a[0]) and the byte offset
// of the 1-based character position argument a[posIdx] (0 when absent);
// positions before the first character or past the one just after the
// last are 3686.
func (r *regexpArgs) subject(a []types.Datum, posIdx int) (*regexp.Regexp, []byte, int, error) {
	re, err := r.get(a)
	if err != nil {
		return nil, nil, 0, err
	}
	s := textOf(a[0])
	if posIdx >= len(a) {
		return re, s, 0, nil
	}
	pos := intOf(a[posIdx])
	if pos < 1 || pos > int64(strChars(s, r.bin))+1 {
		return nil, nil, 0, errRegexpIndex()
	}
	return re, s, charOffset(s, int(pos-1), r.bin), nil
}

// occurrenceArg is the 1-based occurrence argument at i (1 when absent or
// less than 1; MySQL treats those so too, we believe: its ICU search loop
// runs at least once).
func occurrenceArg(a []types.Datum, i int) int {
	if i >= len(a) {
		return 1
	}
	return int(max(min(intOf(a[i]), 1<<31), 1))
}

// nthMatch returns the byte span of the n-th match of re in s from off.
func nthMatch(re *regexp.Regexp, s []byte, off, n int) []int {
	ms := re.FindAllIndex(s[off:], n)
	if len(ms) < n {
		return nil
	}
	m := ms[n-1]
	return []int{m[0] + off, m[1] + off}
}

// buildRegexpInstr compiles REGEXP_INSTR(expr, pat[, pos[, occurrence[,
// return_option[, match_type]]]]): the character position of the match
// (return_option 1: just after it), 0 when there is none.
func buildRegexpInstr(name string, args []Expr) (Expr, error) {
	ra, err := newRegexpArgs(args, 1, 5)
	if err != nil {
		return nil, err
	}
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		re, s, off, err := ra.subject(a, 2)
		if err != nil {
			return types.NullDatum, err
		}
		after := false
		if len(a) > 4 {
			switch intOf(a[4]) {
			case 0:
			case 1:
				after = true
			default:
				return types.NullDatum, errRegexpArg()
			}
		}
		m := nthMatch(re, s, off, occurrenceArg(a, 3))
		if m == nil {
			return types.NewInt(0), nil
		}
		at := m[0]
		if after {
			at = m[1]
		}
		return types.NewInt(int64(strChars(s[:at], ra.bin)) + 1), nil
	}}, nil
}

// buildRegexpSubstr compiles REGEXP_SUBSTR(expr, pat[, pos[, occurrence[,
// match_type]]]): the matching text, NULL when there is none.
func buildRegexpSubstr(name string, args []Expr) (Expr, error) {
	ra, err := newRegexpArgs(args, 1, 4)
	if err != nil {
		return nil, err
	}
	return &funcExpr{name: name, args: args, ft: strType(argFlen(args[0])), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		re, s, off, err := ra.subject(a, 2)
		if err != nil {
			return types.NullDatum, err
		}
		m := nthMatch(re, s, off, occurrenceArg(a, 3))
		if m == nil {
			return types.NullDatum, nil
		}
		return types.NewBytes(s[m[0]:m[1]:m[1]]), nil
	}}, nil
}

// buildRegexpReplace compiles REGEXP_REPLACE(expr, pat, repl[, pos[,
// occurrence[, match_type]]]): expr with every match from pos replaced
// (occurrence 0, the default) or only the occurrence-th.
func buildRegexpReplace(name string, args []Expr) (Expr, error) {
	ra, err := newRegexpArgs(args, 1, 5)
	if err != nil {
		return nil, err
	}
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		re, s, off, err := ra.subject(a, 3)
		if err != nil {
			return types.NullDatum, err
		}
		repl := textOf(a[2])
		occ := 0
		if len(a) > 4 {
			occ = int(max(min(intOf(a[4]), 1<<31), 0))
		}
		ms := re.FindAllSubmatchIndex(s[off:], -1)
		if occ > 0 {
			if occ > len(ms) {
				return types.NewBytes(s), nil
			}
			ms = ms[occ-1 : occ]
		}
		out := append(make([]byte, 0, len(s)), s[:off]...)
		prev := off
		for _, m := range ms {
			out = append(out, s[prev:m[0]+off]...)
			out = expandReplacement(out, repl, s[off:], m)
			prev = m[1] + off
		}
		return types.NewBytes(append(out, s[prev:]...)), nil
	}}, nil
}

// expandReplacement appends repl with ICU's substitutions: $N is group N
// of the match m in s (as many digits as name a group), \c is c.
func expandReplacement(out, repl, s []byte, m []int) []byte {
	groups := len(m)/2 - 1
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			out = append(out, repl[i])
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			g := int(repl[i+1] - '0')
			i++
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' && g*10+int(repl[i+1]-'0') <= groups {
				g = g*10 + int(repl[i+1]-'0')
				i++
			}
			if g <= groups && m[2*g] >= 0 {
				out = append(out, s[m[2*g]:m[2*g+1]]...)
			}
		default:
			out = append(out, c)
		}
	}
	return out
}
