package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// benchText is 10 KB of mixed text: the reference vectors' inputs (several
// scripts, emoji, code-like runs of punctuation and digits) repeated.
func benchText(b *testing.B) string {
	dir := needTestdata(b)
	inp, err := os.ReadFile(filepath.Join(dir, "vocab", "ggml-vocab-llama-spm.gguf.inp"))
	if err != nil {
		b.Fatal(err)
	}
	s := strings.ReplaceAll(string(inp), "\n__ggml_vocab_test__\n", "\n")
	for len(s) < 10<<10 {
		s += s
	}
	s = s[:10<<10]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 { // do not end inside a character
		s = s[:len(s)-1]
	}
	return s
}

func BenchmarkEncode10KB(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama-bpe", "qwen2", "gpt-2", "deepseek-llm"} {
		b.Run(name, func(b *testing.B) {
			tok := loadVocab(b, name)
			text := benchText(b)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				tok.Encode(text, true, true)
			}
		})
	}
}

func BenchmarkDecode10KB(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama-bpe"} {
		b.Run(name, func(b *testing.B) {
			tok := loadVocab(b, name)
			text := benchText(b)
			ids := tok.Encode(text, false, false)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tok.Decode(ids)
			}
		})
	}
}

func BenchmarkFromGGUF(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama-bpe"} {
		b.Run(name, func(b *testing.B) {
			dir := needTestdata(b)
			f, err := gguf.Open(filepath.Join(dir, "vocab", "ggml-vocab-"+name+".gguf"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			for b.Loop() {
				if _, err := FromGGUF(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
