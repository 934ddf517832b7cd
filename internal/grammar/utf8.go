package grammar

import (
	"slices"
	"unicode/utf8"
)

// byteRange is an inclusive range of byte values.
type byteRange struct{ lo, hi byte }

// classSeqs turns a class of code points into UTF-8 byte-range sequences
// whose union is exactly the UTF-8 encodings of the class (surrogates
// excluded, as UTF-8 cannot encode them).
func classSeqs(rs []cpRange, negated bool) [][]byteRange {
	norm := normalise(rs)
	if negated {
		norm = complement(norm)
	}
	norm = subtract(norm, cpRange{0xD800, 0xDFFF})
	var out [][]byteRange
	for _, r := range norm {
		out = splitUTF8(r.lo, r.hi, out)
	}
	return out
}

func normalise(rs []cpRange) []cpRange {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b cpRange) int { return int(a.lo) - int(b.lo) })
	var out []cpRange
	for _, r := range rs {
		if r.hi > utf8.MaxRune {
			r.hi = utf8.MaxRune
		}
		if r.lo > r.hi {
			continue
		}
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func complement(rs []cpRange) []cpRange {
	var out []cpRange
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, cpRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, cpRange{next, utf8.MaxRune})
	}
	return out
}

func subtract(rs []cpRange, cut cpRange) []cpRange {
	var out []cpRange
	for _, r := range rs {
		if r.hi < cut.lo || r.lo > cut.hi {
			out = append(out, r)
			continue
		}
		if r.lo < cut.lo {
			out = append(out, cpRange{r.lo, cut.lo - 1})
		}
		if r.hi > cut.hi {
			out = append(out, cpRange{cut.hi + 1, r.hi})
		}
	}
	return out
}

// splitUTF8 appends the byte-range sequences of [lo, hi]: first split
// where the encoded length changes, then where a continuation byte's
// range would not be full, so each piece is a cross product of ranges.
func splitUTF8(lo, hi rune, out [][]byteRange) [][]byteRange {
	for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && b < hi {
			out = splitUTF8(lo, b, out)
			return splitUTF8(b+1, hi, out)
		}
	}
	if hi < 0x80 {
		return append(out, []byteRange{{byte(lo), byte(hi)}})
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				out = splitUTF8(lo, lo|m, out)
				return splitUTF8((lo|m)+1, hi, out)
			}
			if hi&m != m {
				out = splitUTF8(lo, hi&^m-1, out)
				return splitUTF8(hi&^m, hi, out)
			}
		}
	}
	a, b := utf8.AppendRune(nil, lo), utf8.AppendRune(nil, hi)
	seq := make([]byteRange, n)
	for i := range seq {
		seq[i] = byteRange{a[i], b[i]}
	}
	return append(out, seq)
}
