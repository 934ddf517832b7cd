package tokenizer

import (
	"slices"
	"testing"
)

func words(p preTokenizer, text string) []string {
	var out []string
	for _, w := range p.split(text, nil) {
		out = append(out, text[w[0]:w[1]])
	}
	return out
}

// The expected splits follow from the reference regular expressions by
// hand (leftmost-first alternation, greedy with backtracking, unmatched
// text kept as its own piece).
func TestPreTokenizersSplitLikeTheReferenceRegexes(t *testing.T) {
	pre := func(name string) preTokenizer {
		p, _, _, ok := preTokenizerFor(name)
		if !ok {
			t.Fatalf("no pre-tokenizer %q", name)
		}
		return p
	}
	gpt2, llama3, qwen2, falcon := pre("gpt-2"), pre("llama-bpe"), pre("qwen2"), pre("falcon")
	dsCoder, dsLLM := pre("deepseek-coder"), pre("deepseek-llm")
	tests := []struct {
		name string
		p    preTokenizer
		text string
		want []string
	}{
		{"gpt2 attaches one leading space to a word", gpt2, "Hello world", []string{"Hello", " world"}},
		{"gpt2 leaves the last space of a run for the next word", gpt2, "a   b", []string{"a", "  ", " b"}},
		{"gpt2 takes a whole trailing run of spaces", gpt2, "a  \n", []string{"a", "  \n"}},
		{"gpt2 leaves a lone newline before a word unmatched", gpt2, "\n\nx", []string{"\n", "\n", "x"}},
		{"gpt2 contractions are case-sensitive", gpt2, "I've I'VE", []string{"I", "'ve", " I", "'", "VE"}},
		{"gpt2 splits digits from punctuation", gpt2, "3.14!!", []string{"3", ".", "14", "!!"}},
		{"gpt2 keeps letters of any script together", gpt2, " Grüße мир", []string{" Grüße", " мир"}},
		{"llama3 lets one non-letter lead a word", llama3, "(hello", []string{"(hello"}},
		{"llama3 groups digits by three", llama3, "12345", []string{"123", "45"}},
		{"llama3 contractions ignore case", llama3, "I'VE", []string{"I", "'VE"}},
		{"llama3 ends a whitespace run after its last newline", llama3, " \n\n x", []string{" \n\n", " x"}},
		{"llama3 punctuation takes trailing newlines", llama3, "a...\n\nb", []string{"a", "...\n\n", "b"}},
		{"llama3 takes trailing whitespace whole", llama3, "x  \t", []string{"x", "  \t"}},
		{"qwen2 splits every digit", qwen2, "12345", []string{"1", "2", "3", "4", "5"}},
		{"falcon splits punctuation and digit triples first", falcon, "a+b=1234", []string{"a", "+", "b", "=", "123", "4"}},
		{"deepseek-coder splits newlines and single digits", dsCoder, "x\n42", []string{"x", "\n", "4", "2"}},
		{"deepseek-llm splits trailing spaces off", dsLLM, "a 1  ", []string{"a", " ", "1", "  "}},
		{"deepseek-llm keeps inner spaces before digits", dsLLM, "a   1", []string{"a", "   ", "1"}},
		{"invalid UTF-8 bytes are kept", gpt2, "a\xffb", []string{"a", "\xff", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := words(tc.p, tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("split(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}
