package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// A pre-tokenizer splits text into words before BPE merges run; merges never
// cross a word boundary. The reference pre-tokenizers are lists of regular
// expressions applied in turn: each one splits every piece the previous ones
// produced into its matches and the unmatched gaps between them. Here each
// expression is a matcher, a hand-written scanner that returns the length
// of the expression's leftmost-first match at position i of a piece (0 for
// no match) — with lookahead where the originals use it, which Go's regexp
// lacks, and in linear time.
type matcher func(cps []rune, i int) int

type preTokenizer struct {
	stages []matcher
}

// split returns the words of text as byte ranges, appended to dst. Invalid
// UTF-8 bytes are single characters classed as symbols, so no byte is lost.
func (p preTokenizer) split(text string, dst [][2]int) [][2]int {
	cps := make([]rune, 0, len(text))
	offs := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		cps = append(cps, r)
		offs = append(offs, i)
		i += n
	}
	offs = append(offs, len(text))
	pieces := [][2]int{{0, len(cps)}}
	var next [][2]int
	for _, match := range p.stages {
		next = next[:0]
		for _, pc := range pieces {
			frag := cps[pc[0]:pc[1]]
			gap := 0
			for i := 0; i < len(frag); {
				n := match(frag, i)
				if n == 0 {
					i++
					continue
				}
				if gap < i {
					next = append(next, [2]int{pc[0] + gap, pc[0] + i})
				}
				next = append(next, [2]int{pc[0] + i, pc[0] + i + n})
				i += n
				gap = i
			}
			if gap < len(frag) {
				next = append(next, [2]int{pc[0] + gap, pc[1]})
			}
		}
		pieces, next = next, pieces
	}
	for _, pc := range pieces {
		dst = append(dst, [2]int{offs[pc[0]], offs[pc[1]]})
	}
	return dst
}

// Character classes, as Unicode general categories (\p{L}, \p{N}, \p{P})
// and White_Space (\s).
func isL(r rune) bool     { return unicode.IsLetter(r) }
func isN(r rune) bool     { return unicode.IsNumber(r) }
func isP(r rune) bool     { return unicode.IsPunct(r) }
func isSpace(r rune) bool { return unicode.IsSpace(r) }
func isCRLF(r rune) bool  { return r == '\r' || r == '\n' }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isSpace(r) && !isL(r) && !isN(r) }

// run is the length of the longest run of class members starting at i,
// capped at limit (0 for no cap).
func run(cps []rune, i int, class func(rune) bool, limit int) int {
	k := i
	for k < len(cps) && class(cps[k]) && (limit == 0 || k-i < limit) {
		k++
	}
	return k - i
}

func asciiLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// contraction matches 's 't 're 've 'm 'll 'd (ASCII case-insensitively when
// fold is set).
func contraction(cps []rune, i int, fold bool) int {
	if cps[i] != '\'' || i+1 >= len(cps) {
		return 0
	}
	c1 := cps[i+1]
	if fold {
		c1 = asciiLower(c1)
	}
	switch c1 {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 >= len(cps) {
		return 0
	}
	c2 := cps[i+2]
	if fold {
		c2 = asciiLower(c2)
	}
	switch {
	case c1 == 'r' && c2 == 'e', c1 == 'v' && c2 == 'e', c1 == 'l' && c2 == 'l':
		return 3
	}
	return 0
}

// matchGPT2 is GPT-2's
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
func matchGPT2(cps []rune, i int) int {
	if n := contraction(cps, i, false); n > 0 {
		return n
	}
	j := i
	if cps[i] == ' ' {
		j++
	}
	if j < len(cps) {
		c := cps[j]
		switch {
		case isL(c):
			return j - i + run(cps, j, isL, 0)
		case isN(c):
			return j - i + run(cps, j, isN, 0)
		case isOther(c):
			return j - i + run(cps, j, isOther, 0)
		}
	}
	return trailingSpaces(cps, i)
}

// trailingSpaces is \s+(?!\S): a whitespace run, minus its last character
// when a non-space follows (that one joins the next word).
func trailingSpaces(cps []rune, i int) int {
	n := run(cps, i, isSpace, 0)
	switch {
	case n == 0:
		return 0
	case i+n == len(cps):
		return n
	}
	return n - 1
}

// llama3Matcher builds Llama 3's expression (Qwen2's when maxDigits is 1):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func llama3Matcher(maxDigits int) matcher {
	return func(cps []rune, i int) int {
		if n := contraction(cps, i, true); n > 0 {
			return n
		}
		c := cps[i]
		if isL(c) {
			return run(cps, i, isL, 0)
		}
		if !isCRLF(c) && !isN(c) && i+1 < len(cps) && isL(cps[i+1]) {
			return 1 + run(cps, i+1, isL, 0)
		}
		if isN(c) {
			return run(cps, i, isN, maxDigits)
		}
		j := i
		if c == ' ' {
			j++
		}
		if j < len(cps) && isOther(cps[j]) {
			k := j + run(cps, j, isOther, 0)
			k += run(cps, k, isCRLF, 0)
			return k - i
		}
		n := run(cps, i, isSpace, 0)
		if n == 0 {
			return 0
		}
		for k := i + n - 1; k >= i; k-- { // \s*[\r\n]+ ends after the run's last newline
			if isCRLF(cps[k]) {
				return k + 1 - i
			}
		}
		if n > 1 && i+n < len(cps) {
			return n - 1
		}
		return n
	}
}
