package tokenizer

import "strings"

// preTokenizerFor maps tokenizer.ggml.pre to its pre-tokenizer, and says
// whether words that are whole tokens skip merging and whether BOS is added
// by default (both true only for Llama 3 style vocabularies). ok is false
// for names this package does not know: tokenizing with the wrong
// pre-tokenizer would silently give ids the model was not trained on.
func preTokenizerFor(name string) (p preTokenizer, ignoreMerges, addBOS, ok bool) {
	gpt2 := matcher(matchGPT2)
	switch name {
	case "", "default":
		return preTokenizer{[]matcher{punctRun("$+<=>^~|"), gpt2, numberRun, asciiDigits3}}, false, false, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		return preTokenizer{[]matcher{llama3Matcher(3)}}, true, true, true
	case "dbrx", "smaug-bpe":
		return preTokenizer{[]matcher{llama3Matcher(3)}}, false, false, true
	case "qwen2", "qwen2.5", "qwen-2.5", "deepseek-r1-qwen", "stablelm2", "megrez", "kormo":
		return preTokenizer{[]matcher{llama3Matcher(1)}}, false, false, true
	case "gpt-2", "gpt2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "gigachat",
		"jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe", "exaone4", "mellum":
		return preTokenizer{[]matcher{gpt2}}, false, false, true
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return preTokenizer{[]matcher{singleNumber, gpt2}}, false, false, true
	case "falcon":
		return preTokenizer{[]matcher{punctRun("$+<=>^~|`"), gpt2, asciiDigits3}}, false, false, true
	case "deepseek-llm":
		return preTokenizer{[]matcher{singleCRLF, spaceThen(inClass(deepseekLetters)),
			spaceThen(inClass(deepseekPunct)), spacesAtEnd, classRun(cjkHangul), numberRun}}, false, false, true
	case "deepseek-coder":
		return preTokenizer{[]matcher{singleCRLF, spaceThen(isL), spaceThen(isP),
			classRun(cjkHangul), singleNumber}}, false, false, true
	}
	return preTokenizer{}, false, false, false
}

// punctRun is [\p{P}extra]+.
func punctRun(extra string) matcher {
	in := func(r rune) bool { return isP(r) || strings.ContainsRune(extra, r) }
	return func(cps []rune, i int) int { return run(cps, i, in, 0) }
}

// numberRun is \p{N}+; singleNumber is \p{N}.
func numberRun(cps []rune, i int) int    { return run(cps, i, isN, 0) }
func singleNumber(cps []rune, i int) int { return run(cps, i, isN, 1) }

// singleCRLF is [\r\n].
func singleCRLF(cps []rune, i int) int { return run(cps, i, isCRLF, 1) }

// asciiDigits3 is [0-9][0-9][0-9].
func asciiDigits3(cps []rune, i int) int {
	if run(cps, i, func(r rune) bool { return r >= '0' && r <= '9' }, 3) == 3 {
		return 3
	}
	return 0
}

// spacesAtEnd is \s+$ (the end of the piece being split). It only tries
// at the start of a whitespace run: inside a run the answer is the same,
// and scanning each run once keeps long runs linear.
func spacesAtEnd(cps []rune, i int) int {
	if i > 0 && isSpace(cps[i-1]) {
		return 0
	}
	if n := run(cps, i, isSpace, 0); i+n == len(cps) {
		return n
	}
	return 0
}

// classRun is class+.
func classRun(class func(rune) bool) matcher {
	return func(cps []rune, i int) int { return run(cps, i, class, 0) }
}

// spaceThen is \s?class+, the optional space taken when a member follows.
func spaceThen(class func(rune) bool) matcher {
	return func(cps []rune, i int) int {
		if isSpace(cps[i]) && i+1 < len(cps) {
			if n := run(cps, i+1, class, 0); n > 0 {
				return 1 + n
			}
		}
		return run(cps, i, class, 0)
	}
}

// inClass builds a membership test from a bracket-expression body of
// literal characters and a-b ranges. The reference engine rewrites
// non-ASCII whitespace before matching such classes, so whitespace is never
// a member.
func inClass(body string) func(rune) bool {
	rs := []rune(body)
	var ranges [][2]rune
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			ranges = append(ranges, [2]rune{rs[i], rs[i+2]})
			i += 2
			continue
		}
		ranges = append(ranges, [2]rune{rs[i], rs[i]})
	}
	return func(r rune) bool {
		if isSpace(r) {
			return false
		}
		for _, rg := range ranges {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
}

// The character classes of DeepSeek's pre-tokenizers (from their
// tokenizer.json): Latin/Greek/Cyrillic/... letters, ASCII and full-width
// punctuation, and CJK ideographs plus Hangul.
const (
	deepseekLetters = "A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-" +
		"ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-" +
		"ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃"
	deepseekPunct = "!-/:-~！-／：-～‘-‟　-。"
)

var cjkHangul = inClass("一-龥ࠀ-一가-퟿")
