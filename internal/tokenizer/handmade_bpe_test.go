package tokenizer

import (
	"slices"
	"testing"
)

// smallBPE is a byte-level vocabulary: ids 0..255 spell the single bytes,
// then a few merged tokens. "xy" is deliberately not a token although the
// merge "x y" exists, so "xyz" is reached through a non-token intermediate.
func smallBPE(pre string) []kv {
	var toks []string
	var types []int32
	for b := range 256 {
		toks = append(toks, byteString[b])
		types = append(types, 1)
	}
	toks = append(toks, "ab", "bc", "abc", "xyz", "qq", "<|end|>") // 256..261
	types = append(types, 1, 1, 1, 1, 1, 3)
	return []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", pre},
		{"tokenizer.ggml.tokens", toks},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", []string{"b c", "a b", "a bc", "ab c", "x y", "xy z", "b c"}},
		{"tokenizer.ggml.eos_token_id", uint32(261)},
	}
}

func TestHandMadeByteLevelBPE(t *testing.T) {
	gpt2, err := FromGGUF(buildGGUF(t, smallBPE("gpt-2")...))
	if err != nil {
		t.Fatal(err)
	}
	llama3, err := FromGGUF(buildGGUF(t, smallBPE("llama-bpe")...))
	if err != nil {
		t.Fatal(err)
	}
	const ab, abc, xyz, qq, end = 256, 258, 259, 260, 261
	tests := []struct {
		name  string
		tok   *Tokenizer
		text  string
		parse bool
		want  []int32
	}{
		{"lowest-ranked merge applies first", gpt2, "abc", false, []int32{abc}},
		{"equal ranks merge leftmost first", gpt2, "abab", false, []int32{ab, ab}},
		{"merges never cross a pre-tokenizer word boundary", gpt2, "ab abc", false, []int32{ab, ' ', abc}},
		{"a non-token intermediate can still merge on", gpt2, "xyz", false, []int32{xyz}},
		{"a non-token final symbol falls back to its single bytes", gpt2, "xy", false, []int32{'x', 'y'}},
		{"a word without merges stays bytes", gpt2, "qq", false, []int32{'q', 'q'}},
		{"Llama 3 takes a word that is a token whole", llama3, "qq", false, []int32{qq}},
		{"bytes outside ASCII use the shifted alphabet", gpt2, "\n\xff", false, []int32{'\n', 0xff}},
		{"control text stays text without parse_special", gpt2, "<|end|>", false, []int32{'<', '|', 'e', 'n', 'd', '|', '>'}},
		{"control text is the token with parse_special", gpt2, "ab<|end|>", true, []int32{ab, end}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.tok.Encode(tc.text, false, tc.parse)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
			want := tc.text
			if tc.parse {
				want = "ab" // the control token prints nothing
			}
			if d := tc.tok.Decode(got); d != want {
				t.Fatalf("Decode(%v) = %q, want %q", got, d, want)
			}
		})
	}
	if !gpt2.IsEOG(end) {
		t.Error("<|end|> is the EOS and must end generation")
	}
	// Without a bos_token_id key llama.cpp falls back to id 11 (Falcon's
	// <|endoftext|>) for gpt2 vocabularies, and Llama 3 style ones add it.
	if gpt2.BOS() != 11 {
		t.Errorf("BOS() = %d, want llama.cpp's default 11", gpt2.BOS())
	}
	if got := llama3.Encode("ab", true, false); !slices.Equal(got, []int32{11, ab}) {
		t.Errorf("Encode with specials = %v, want [11 %d]", got, ab)
	}
	if got := gpt2.Encode("ab", true, false); !slices.Equal(got, []int32{ab}) {
		t.Errorf("plain gpt2 adds no BOS by default: Encode = %v", got)
	}
}
