package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// kv is one metadata entry for a hand-made vocabulary.
type kv struct {
	key   string
	value any
}

// buildGGUF writes metadata with gguf.NewWriter and parses it back, the way
// the copy model's vocabulary reaches the tokenizer.
func buildGGUF(t testing.TB, entries ...kv) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for _, e := range entries {
		v := e.value
		switch v.(type) {
		case []string, []float32, []int32:
			a, err := gguf.NewArray(v)
			if err != nil {
				t.Fatal(err)
			}
			v = a
		}
		if err := w.Set(e.key, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// smallSPM is a copy-model style SentencePiece vocabulary: <unk>, <s>, </s>,
// the 256 byte tokens (ids 3..258), then a few pieces whose scores decide
// the merge order.
func smallSPM(extra ...kv) []kv {
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	pieces := []struct {
		s     string
		score float32
	}{
		{"▁", -1}, {"a", -2}, {"b", -3}, {"c", -4}, // 259..262
		{"ab", -5},   // 263: wins over "▁a" although both are possible
		{"▁a", -6},   // 264
		{"▁ab", -7},  // 265
		{"bc", -0.5}, // 266: best score, merges first
		{"é", -8},    // 267: a two-byte character with its own token
		{"KEY", -9},  // 268: user-defined, always matched whole
	}
	scores := make([]float32, len(toks))
	for _, p := range pieces {
		toks = append(toks, p.s)
		scores = append(scores, p.score)
		types = append(types, 1)
	}
	types[len(types)-1] = 4
	return append([]kv{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", toks},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
	}, extra...)
}

func newSmallSPM(t testing.TB, extra ...kv) *Tokenizer {
	t.Helper()
	tok, err := FromGGUF(buildGGUF(t, smallSPM(extra...)...))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestHandMadeSPMVocabulary(t *testing.T) {
	tok := newSmallSPM(t)
	const (
		bos, eos                  = 1, 2
		sp, b                     = 259, 261
		ab, spA, spAB, bc, eAcute = 263, 264, 265, 266, 267
		key                       = 268
		byteZ, byteNL             = 3 + 'z', 3 + '\n'
	)
	tests := []struct {
		name        string
		text        string
		addSpecial  bool
		parse       bool
		want        []int32
		wantDecoded string
	}{
		{"empty text gives no tokens", "", false, false, nil, ""},
		{"empty text with specials is just BOS", "", true, false, []int32{bos}, ""},
		{"space is prepended and merged by score", "ab", false, false, []int32{spAB}, "ab"},
		{"BOS is added by default for llama vocabularies", "ab", true, false, []int32{bos, spAB}, "ab"},
		{"best-scoring pair merges first", "abc", false, false, []int32{spA, bc}, "abc"},
		{"characters without a token fall back to bytes", "z\n", false, false, []int32{sp, byteZ, byteNL}, "z\n"},
		{"a multi-byte character with a token stays whole", "é", false, false, []int32{sp, eAcute}, "é"},
		{"a multi-byte character without one becomes its bytes", "ß", false, false, []int32{sp, 3 + 0xC3, 3 + 0x9F}, "ß"},
		{"the ▁ character itself reads as a space", "▁", false, false, []int32{sp, sp}, " "},
		{"inner spaces become ▁", "a b", false, false, []int32{spA, sp, b}, "a b"},
		{"a leading space survives the round trip", " a", false, false, []int32{sp, spA}, " a"},
		{"user-defined text is matched without parse_special", "aKEYb", false, false, []int32{spA, key, sp, b}, "aKEY b"},
		{"control text is plain text without parse_special", "</s>", false, false, nil, ""},
		{"control text becomes its id with parse_special", "a</s>", false, true, []int32{spA, eos}, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tok.Encode(tc.text, tc.addSpecial, tc.parse)
			if tc.name == "control text is plain text without parse_special" {
				if slices.Contains(got, eos) {
					t.Fatalf("Encode(%q) = %v contains EOS %d", tc.text, got, eos)
				}
				if d := tok.Decode(got); d != tc.text {
					t.Fatalf("Decode = %q, want %q", d, tc.text)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
			if d := tok.Decode(got); d != tc.wantDecoded {
				t.Fatalf("Decode(%v) = %q, want %q", got, d, tc.wantDecoded)
			}
		})
	}
}

func TestHandMadeSPMMetadataFlags(t *testing.T) {
	tok := newSmallSPM(t, kv{"tokenizer.ggml.add_bos_token", false}, kv{"tokenizer.ggml.add_eos_token", true})
	if got := tok.Encode("ab", true, false); !slices.Equal(got, []int32{265, 2}) {
		t.Fatalf("add_bos=false add_eos=true: got %v, want [265 2]", got)
	}
	tok = newSmallSPM(t, kv{"tokenizer.ggml.add_space_prefix", false})
	if got := tok.Encode("ab", false, false); !slices.Equal(got, []int32{263}) {
		t.Fatalf("add_space_prefix=false: got %v, want [263]", got)
	}
	if d := tok.Decode([]int32{259, 263}); d != " ab" {
		t.Fatalf("add_space_prefix=false keeps the leading space: got %q", d)
	}
}

func TestHandMadeSPMAccessors(t *testing.T) {
	tok := newSmallSPM(t, kv{"tokenizer.chat_template", "{{ messages }}"})
	if tok.VocabSize() != 269 || tok.BOS() != 1 || tok.EOS() != 2 {
		t.Fatalf("VocabSize/BOS/EOS = %d/%d/%d", tok.VocabSize(), tok.BOS(), tok.EOS())
	}
	if !tok.IsEOG(2) || tok.IsEOG(1) || tok.IsEOG(260) {
		t.Fatal("IsEOG: want only EOS")
	}
	if tok.ChatTemplate() != "{{ messages }}" {
		t.Fatalf("ChatTemplate = %q", tok.ChatTemplate())
	}
	if id, ok := tok.TokenID("▁ab"); !ok || id != 265 {
		t.Fatalf("TokenID(▁ab) = %d, %v", id, ok)
	}
	if _, ok := tok.TokenID("nope"); ok {
		t.Fatal("TokenID found a token that does not exist")
	}
	for _, tc := range []struct {
		id   int32
		want string
	}{{3 + 0xFF, "\xff"}, {265, " ab"}, {2, "</s>"}, {-1, ""}, {269, ""}} {
		if got := string(tok.Piece(tc.id)); got != tc.want {
			t.Errorf("Piece(%d) = %q, want %q", tc.id, got, tc.want)
		}
	}
	p := tok.Piece(265)
	p[0] = 'X'
	if got := string(tok.Piece(265)); got != " ab" {
		t.Fatalf("modifying a returned piece changed the vocabulary: %q", got)
	}
}

func TestFromGGUFErrors(t *testing.T) {
	base := smallSPM()
	replace := func(key string, v any) []kv {
		out := slices.Clone(base)
		for i := range out {
			if out[i].key == key {
				out[i].value = v
			}
		}
		return out
	}
	drop := func(key string) []kv {
		return slices.DeleteFunc(slices.Clone(base), func(e kv) bool { return e.key == key })
	}
	tests := []struct {
		name    string
		entries []kv
		want    error
	}{
		{"no tokenizer keys at all", []kv{{"general.architecture", "llama"}}, ErrNoTokenizer},
		{"model without token list", drop("tokenizer.ggml.tokens"), ErrNoTokenizer},
		{"unknown tokenizer model", replace("tokenizer.ggml.model", "t5"), ErrUnsupported},
		{"scores of the wrong length", replace("tokenizer.ggml.scores", []float32{1}), ErrInvalid},
		{"types of the wrong length", replace("tokenizer.ggml.token_type", []int32{1}), ErrInvalid},
		{"model name of the wrong type", replace("tokenizer.ggml.model", uint32(3)), ErrInvalid},
		{"gpt2 without merges", replace("tokenizer.ggml.model", "gpt2"), ErrInvalid},
		{"unknown pre-tokenizer", append(replace("tokenizer.ggml.model", "gpt2"),
			kv{"tokenizer.ggml.merges", []string{"a b"}}, kv{"tokenizer.ggml.pre", "no-such-pre"}), ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromGGUF(buildGGUF(t, tc.entries...))
			if !errors.Is(err, tc.want) {
				t.Fatalf("FromGGUF error = %v, want %v", err, tc.want)
			}
		})
	}
}
