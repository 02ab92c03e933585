package types

import (
	"cmp"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// Decimal limits as MySQL has them.
const (
	MaxDecimalScale   = 30 // largest scale of a DECIMAL column or result
	MaxDecimalWidth   = 65 // largest precision
	DivPrecisionIncr  = 4  // div_precision_increment: scale added by '/' and AVG
	maxDecimalLiteral = 200
)

// Decimal is an exact decimal number: coefficient × 10^-scale. Coefficients
// that fit an int64 (every DECIMAL(18,s) value and most results) are held
// inline, so arithmetic on them does not allocate; larger ones use big.Int.
// The scale is significant: 1.10 and 1.1 compare equal but print
// differently, as MySQL's DECIMAL does.
type Decimal struct {
	c     int64
	b     *big.Int // when non-nil, the coefficient (c is unused)
	scale int
}

var pow10 = [19]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

var bigTen = big.NewInt(10)

func bigPow10(n int) *big.Int {
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// NewDecimal returns coef × 10^-scale.
func NewDecimal(coef int64, scale int) Decimal { return Decimal{c: coef, scale: scale} }

func decFromBig(b *big.Int, scale int) Decimal {
	if b.IsInt64() {
		return Decimal{c: b.Int64(), scale: scale}
	}
	return Decimal{b: b, scale: scale}
}

// Scale is the number of fractional digits.
func (d Decimal) Scale() int { return d.scale }

func (d Decimal) bigCoef() *big.Int {
	if d.b != nil {
		return d.b
	}
	return big.NewInt(d.c)
}

// Sign returns -1, 0 or 1.
func (d Decimal) Sign() int {
	if d.b != nil {
		return d.b.Sign()
	}
	return cmp.Compare(d.c, 0)
}

// mul64 multiplies without overflow, reporting ok=false when it would.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	neg := (a < 0) != (b < 0)
	ua, ub := absU(a), absU(b)
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

func absU(a int64) uint64 {
	if a < 0 {
		return uint64(-(a + 1)) + 1
	}
	return uint64(a)
}

// rescale raises d's scale to s (s >= d.scale) exactly.
func (d Decimal) rescale(s int) Decimal {
	n := s - d.scale
	if n <= 0 {
		return d
	}
	if d.b == nil && n < len(pow10) {
		if c, ok := mul64(d.c, pow10[n]); ok {
			return Decimal{c: c, scale: s}
		}
	}
	return Decimal{b: new(big.Int).Mul(d.bigCoef(), bigPow10(n)), scale: s}
}

// Neg returns -d.
func (d Decimal) Neg() Decimal {
	if d.b == nil && d.c != math.MinInt64 {
		return Decimal{c: -d.c, scale: d.scale}
	}
	return decFromBig(new(big.Int).Neg(d.bigCoef()), d.scale)
}

// Add returns x+y with scale max(x.scale, y.scale).
func (x Decimal) Add(y Decimal) Decimal {
	s := max(x.scale, y.scale)
	x, y = x.rescale(s), y.rescale(s)
	if x.b == nil && y.b == nil {
		if r := x.c + y.c; (r > x.c) == (y.c > 0) {
			return Decimal{c: r, scale: s}
		}
	}
	return decFromBig(new(big.Int).Add(x.bigCoef(), y.bigCoef()), s)
}

// Sub returns x-y with scale max(x.scale, y.scale).
func (x Decimal) Sub(y Decimal) Decimal { return x.Add(y.Neg()) }

// Mul returns x*y with scale x.scale+y.scale (at most 30, rounded half up).
func (x Decimal) Mul(y Decimal) Decimal {
	s := x.scale + y.scale
	var r Decimal
	if x.b == nil && y.b == nil {
		if c, ok := mul64(x.c, y.c); ok {
			r = Decimal{c: c, scale: s}
		}
	}
	if r.scale != s {
		r = decFromBig(new(big.Int).Mul(x.bigCoef(), y.bigCoef()), s)
	}
	if s > MaxDecimalScale {
		r = r.Round(MaxDecimalScale)
	}
	return r
}

// Div returns x/y rounded half up to scale x.scale+incr (at most 30);
// ok=false when y is zero.
func (x Decimal) Div(y Decimal, incr int) (Decimal, bool) {
	if y.Sign() == 0 {
		return Decimal{}, false
	}
	rs := min(x.scale+incr, MaxDecimalScale)
	// x/y at scale rs: x.c*10^(rs-x.scale+y.scale) / y.c.
	e := rs - x.scale + y.scale
	num, den := x, y
	if e >= 0 {
		num = x.rescale(x.scale + e)
	} else {
		den = y.rescale(y.scale - e)
	}
	if num.b == nil && den.b == nil && !(num.c == math.MinInt64 && den.c == -1) {
		q, r := num.c/den.c, num.c%den.c
		if absU(r) >= absU(den.c)-absU(r) { // 2|r| >= |den|, without overflow
			if (num.c < 0) != (den.c < 0) {
				q--
			} else {
				q++
			}
		}
		return Decimal{c: q, scale: rs}, true
	}
	n, d := num.bigCoef(), den.bigCoef()
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.CmpAbs(d) >= 0 {
		if n.Sign() != d.Sign() {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return decFromBig(q, rs), true
}

// Mod returns x MOD y (sign of x) with scale max(x.scale, y.scale); ok=false
// when y is zero.
func (x Decimal) Mod(y Decimal) (Decimal, bool) {
	if y.Sign() == 0 {
		return Decimal{}, false
	}
	s := max(x.scale, y.scale)
	x, y = x.rescale(s), y.rescale(s)
	if x.b == nil && y.b == nil {
		if y.c == -1 {
			return Decimal{scale: s}, true
		}
		return Decimal{c: x.c % y.c, scale: s}, true
	}
	return decFromBig(new(big.Int).Rem(x.bigCoef(), y.bigCoef()), s), true
}

// IntDiv returns x DIV y truncated toward zero; ok=false when y is zero.
func (x Decimal) IntDiv(y Decimal) (Decimal, bool) {
	if y.Sign() == 0 {
		return Decimal{}, false
	}
	s := max(x.scale, y.scale)
	x, y = x.rescale(s), y.rescale(s)
	if x.b == nil && y.b == nil && !(x.c == math.MinInt64 && y.c == -1) {
		return Decimal{c: x.c / y.c}, true
	}
	return decFromBig(new(big.Int).Quo(x.bigCoef(), y.bigCoef()), 0), true
}

// Cmp compares x and y exactly, ignoring scale (1.10 == 1.1).
func (x Decimal) Cmp(y Decimal) int {
	s := max(x.scale, y.scale)
	x, y = x.rescale(s), y.rescale(s)
	if x.b == nil && y.b == nil {
		return cmp.Compare(x.c, y.c)
	}
	return x.bigCoef().Cmp(y.bigCoef())
}

// Round returns d rounded half away from zero (MySQL's ROUND_HALF_UP) to
// scale s; a larger s pads with zeros.
func (d Decimal) Round(s int) Decimal {
	n := d.scale - s
	if n <= 0 {
		return d.rescale(s)
	}
	if d.b == nil && n < len(pow10) {
		p := pow10[n]
		q, r := d.c/p, d.c%p
		if absU(r) >= uint64(p)-absU(r) {
			if d.c < 0 {
				q--
			} else {
				q++
			}
		}
		return Decimal{c: q, scale: s}
	}
	if d.b == nil && n >= len(pow10) {
		return Decimal{scale: s} // |d| < 10^18 × 10^-n < 0.5 × 10^-s
	}
	p := bigPow10(n)
	q, r := new(big.Int).QuoRem(d.b, p, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(p) >= 0 {
		q.Add(q, big.NewInt(int64(d.b.Sign())))
	}
	return decFromBig(q, s)
}

// IntDigits is the number of digits left of the point (0 for |d| < 1).
func (d Decimal) IntDigits() int {
	var buf [24]byte
	digits := d.appendAbsCoef(buf[:0])
	n := len(digits) - d.scale
	if n <= 0 || (len(digits) == 1 && digits[0] == '0') {
		return 0
	}
	return n
}

func (d Decimal) appendAbsCoef(b []byte) []byte {
	if d.b == nil {
		return strconv.AppendUint(b, absU(d.c), 10)
	}
	return new(big.Int).Abs(d.b).Append(b, 10)
}

// Append appends d's text form with exactly Scale() fractional digits
// ("-10.00", "0.3333"); zero never has a sign.
func (d Decimal) Append(b []byte) []byte {
	if d.Sign() < 0 {
		b = append(b, '-')
	}
	start := len(b)
	b = d.appendAbsCoef(b)
	if d.scale <= 0 {
		return b
	}
	digits := len(b) - start
	if digits <= d.scale { // left-pad to "0.00ddd"
		pad := d.scale - digits + 1
		for i := 0; i < pad; i++ {
			b = append(b, '0')
		}
		copy(b[start+pad:], b[start:start+digits])
		for i := 0; i < pad; i++ {
			b[start+i] = '0'
		}
		digits += pad
	}
	b = append(b, 0)
	p := start + digits - d.scale
	copy(b[p+1:], b[p:start+digits])
	b[p] = '.'
	return b
}

// Int64 returns d's value when it is an integer that fits an int64.
func (d Decimal) Int64() (int64, bool) {
	d = d.Round(0)
	if d.b != nil {
		return 0, false
	}
	return d.c, true
}

// Overflows reports whether d has more than 65 digits (MySQL's limit).
func (d Decimal) Overflows() bool {
	return d.b != nil && d.IntDigits() > MaxDecimalWidth-d.scale
}

// String is the text form.
func (d Decimal) String() string { return string(d.Append(nil)) }

// Datum returns d in its storage form (canonical text).
func (d Decimal) Datum() Datum { return NewBytes(d.Append(nil)) }

// Float64 converts d to the nearest double.
func (d Decimal) Float64() float64 {
	var buf [48]byte
	f, _ := strconv.ParseFloat(string(d.Append(buf[:0])), 64)
	return f
}

// ParseDecimal parses [+-]digits[.digits][e[+-]digits] with surrounding
// spaces; ok=false for anything else.
func ParseDecimal(s []byte) (Decimal, bool) {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	if len(s) == 0 || len(s) > maxDecimalLiteral {
		return Decimal{}, false
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	var c int64
	var bc *big.Int
	scale, nd, inFrac := 0, 0, false
	i := 0
	for ; i < len(s); i++ {
		ch := s[i]
		if ch == '.' && !inFrac {
			inFrac = true
			continue
		}
		if ch < '0' || ch > '9' {
			break
		}
		nd++
		if inFrac {
			scale++
		}
		v := int64(ch - '0')
		if bc == nil && c <= (math.MaxInt64-v)/10 {
			c = c*10 + v
			continue
		}
		if bc == nil {
			bc = big.NewInt(c)
		}
		bc.Mul(bc, bigTen).Add(bc, big.NewInt(v))
	}
	if nd == 0 {
		return Decimal{}, false
	}
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return Decimal{}, false
		}
		e, err := strconv.Atoi(string(s[i+1:]))
		if err != nil || e > maxDecimalLiteral || e < -maxDecimalLiteral {
			return Decimal{}, false
		}
		scale -= e
	}
	d := Decimal{c: c, b: bc, scale: scale}
	if bc != nil {
		d = decFromBig(bc, scale)
	}
	if neg {
		d = d.Neg()
	}
	if d.scale < 0 {
		d = d.rescale(0)
	}
	if d.scale > MaxDecimalScale {
		d = d.Round(MaxDecimalScale)
	}
	return d, true
}

// ToDecimal converts an integer, double or numeric string to a Decimal;
// ok=false for NULL and non-numeric strings.
func ToDecimal(d Datum) (Decimal, bool) {
	switch d.Kind() {
	case KindInt64:
		return Decimal{c: d.Int64()}, true
	case KindUint64:
		if v := d.Uint64(); v <= math.MaxInt64 {
			return Decimal{c: int64(v)}, true
		}
		return Decimal{b: new(big.Int).SetUint64(d.Uint64())}, true
	case KindFloat64:
		f := d.Float64()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return Decimal{}, false
		}
		var buf [32]byte
		return ParseDecimal(strconv.AppendFloat(buf[:0], f, 'g', -1, 64))
	case KindBytes:
		return ParseDecimal(d.Bytes())
	case KindJSON:
		if v := JSONToDatum(d.JSON()); v.Kind() != KindBytes || d.JSON().Tp == JSONDecimal {
			return ToDecimal(v)
		}
	}
	return Decimal{}, false
}

// DecimalResultType is the static type of a decimal arithmetic result:
// precision p, scale s, both clamped to MySQL's limits.
func DecimalResultType(p, s int) FieldType {
	s = min(s, MaxDecimalScale)
	p = min(max(p, s+1), MaxDecimalWidth)
	return DecimalType(p, s)
}

// DecimalArithType is the result type of `l op r` when both are exact
// (integer or decimal) and the result is decimal: add/sub keep the larger
// scale, mul adds scales, div adds div_precision_increment to l's scale.
func DecimalArithType(op byte, l, r FieldType) FieldType {
	ls, rs := max(l.Decimal, 0), max(r.Decimal, 0)
	lp, rp := l.Flen, r.Flen
	if l.Class() == ClassInt {
		ls, lp = 0, max(lp, 1)
	}
	if r.Class() == ClassInt {
		rs, rp = 0, max(rp, 1)
	}
	switch op {
	case '+', '-':
		s := max(ls, rs)
		return DecimalResultType(max(lp-ls, rp-rs)+s+1, s)
	case '*':
		return DecimalResultType(lp+rp, ls+rs)
	case '/':
		s := ls + DivPrecisionIncr
		return DecimalResultType(lp-ls+rs+s, s)
	}
	// '%'
	s := max(ls, rs)
	return DecimalResultType(max(lp-ls, rp-rs)+s, s)
}
