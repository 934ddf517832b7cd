package tokenizer

import (
	"slices"
	"testing"
)

// The ids below are read from the vocab files' own token lists (e.g. Qwen's
// <|im_start|> is 151644), not produced by this package.

func TestSpecialTextIsParsedOnlyWhenAsked(t *testing.T) {
	qwen := loadVocab(t, "qwen2")
	const imStart, imEnd, think = 151644, 151645, 151667
	body := qwen.Encode("user\nHi", false, false)
	got := qwen.Encode("<|im_start|>user\nHi<|im_end|>", false, true)
	want := append(append([]int32{imStart}, body...), imEnd)
	if !slices.Equal(got, want) {
		t.Fatalf("parse_special: got %v, want %v", got, want)
	}
	plain := qwen.Encode("<|im_start|>user\nHi<|im_end|>", false, false)
	if slices.Contains(plain, imStart) || slices.Contains(plain, imEnd) {
		t.Fatalf("without parse_special the markers must stay text: %v", plain)
	}
	if d := qwen.Decode(plain); d != "<|im_start|>user\nHi<|im_end|>" {
		t.Fatalf("plain markers decode to %q", d)
	}
	// User-defined tokens (<think> is type 4) are matched even without parse_special.
	if got := qwen.Encode("a<think>b", false, false); !slices.Contains(got, think) {
		t.Fatalf("user-defined <think> not matched: %v", got)
	}
}

func TestSpecialTextSPMRestartsTheSpacePrefix(t *testing.T) {
	spm := loadVocab(t, "llama-spm")
	// After a special token the next text is prefixed with a space again,
	// as llama.cpp does.
	got := spm.Encode("<s>Hello", false, true)
	want := append([]int32{1}, spm.Encode("Hello", false, false)...)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAddSpecialFollowsMetadataAndDefaults(t *testing.T) {
	tests := []struct {
		vocab   string
		bos     int32
		wantBOS bool
	}{
		{"llama-spm", 1, true},      // add_bos_token = true
		{"llama-bpe", 128000, true}, // no key: Llama 3 pre-tokenizer adds BOS
		{"qwen2", 151643, false},    // add_bos_token = false
		{"gpt-2", 50256, false},     // no key: plain BPE adds none
		{"deepseek-llm", 100000, true},
	}
	for _, tc := range tests {
		t.Run(tc.vocab, func(t *testing.T) {
			tok := loadVocab(t, tc.vocab)
			if tok.BOS() != tc.bos {
				t.Fatalf("BOS() = %d, want %d", tok.BOS(), tc.bos)
			}
			with := tok.Encode("Hello world", true, false)
			without := tok.Encode("Hello world", false, false)
			hasBOS := len(with) > 0 && with[0] == tc.bos
			if hasBOS != tc.wantBOS {
				t.Fatalf("Encode(addSpecial) = %v: BOS added %v, want %v", with, hasBOS, tc.wantBOS)
			}
			if tc.wantBOS && !slices.Equal(with[1:], without) {
				t.Fatalf("with BOS %v is not BOS + %v", with, without)
			}
		})
	}
}

func TestIsEOGCoversChatEndMarkers(t *testing.T) {
	tests := []struct {
		vocab string
		eog   []int32
		not   []int32
	}{
		{"llama-bpe", []int32{128001, 128009}, []int32{128000, 128006}}, // <|end_of_text|>, <|eot_id|>; not BOS, <|start_header_id|>
		{"qwen2", []int32{151645, 151643}, []int32{151644}},             // <|im_end|>, <|endoftext|>; not <|im_start|>
		{"phi-3", []int32{32000, 32007}, []int32{1, 32001}},             // <|endoftext|>, <|end|>; not <s>, <|assistant|>
		{"llama-spm", []int32{2}, []int32{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.vocab, func(t *testing.T) {
			tok := loadVocab(t, tc.vocab)
			for _, id := range tc.eog {
				if !tok.IsEOG(id) {
					t.Errorf("IsEOG(%d %q) = false", id, tok.TokenText(id))
				}
			}
			for _, id := range tc.not {
				if tok.IsEOG(id) {
					t.Errorf("IsEOG(%d %q) = true", id, tok.TokenText(id))
				}
			}
		})
	}
}

func TestPhi3ChatMarkersSwallowFollowingWhitespace(t *testing.T) {
	tok := loadVocab(t, "phi-3")
	if !tok.rstrip[32007] {
		t.Skip("phi-3 vocab's general.name does not name Phi-3; rstrip rule not applied")
	}
	got := tok.Encode("<|user|>\nHi<|end|>\n", false, true)
	want := append(append([]int32{32010}, tok.Encode("Hi", false, false)...), 32007)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestWordPieceWrapsInCLSAndSEP(t *testing.T) {
	bert := loadVocab(t, "bert-bge")
	const cls, sep = 101, 102 // [CLS], [SEP] in the vocab file
	body := bert.Encode("Hello world", false, false)
	got := bert.Encode("Hello world", true, false)
	want := append(append([]int32{cls}, body...), sep)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// WordPiece lowercases and strips accents, so decoding gives the
	// normalized text back.
	if d := bert.Decode(got); d != "hello world" {
		t.Fatalf("Decode = %q, want %q", d, "hello world")
	}
	if d := bert.Decode(bert.Encode("Crème BRÛLÉE", false, false)); d != "creme brulee" {
		t.Fatalf("Decode = %q, want accents stripped and lowercased", d)
	}
}
