package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// FromGGUF builds the tokenizer described by f's tokenizer.ggml.* keys. The
// defaults for absent keys (special ids, whether BOS is added, the space
// prefix) are llama.cpp's, so ids match what llama.cpp produces for the file.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	model, err := f.String("tokenizer.ggml.model")
	if errors.Is(err, gguf.ErrNoKey) {
		return nil, ErrNoTokenizer
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	t := &Tokenizer{bos: -1, eos: -1, unk: -1, sep: -1}
	switch model {
	case "llama":
		t.kind = kindSPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addBOS, t.addSpacePrefix = true, true
	case "gpt2":
		t.kind = kindBPE
		t.bos, t.eos = 11, 11 // llama.cpp's defaults for gpt2 vocabularies
	case "bert":
		t.kind = kindWPM
		t.bos, t.unk, t.sep = 101, 100, 102 // [CLS], [UNK], [SEP]
		t.addBOS, t.addSEP = true, true
	case "none", "no_vocab":
		return nil, ErrNoTokenizer
	default:
		return nil, fmt.Errorf("%w: tokenizer.ggml.model %q (supported: llama, gpt2, bert)", ErrUnsupported, model)
	}
	if err := t.loadTokens(f); err != nil {
		return nil, err
	}
	if t.kind == kindBPE {
		pre, err := optString(f, "tokenizer.ggml.pre", "default")
		if err != nil {
			return nil, err
		}
		if err := t.loadBPE(f, pre); err != nil {
			return nil, err
		}
	} else if t.kind == kindSPM {
		t.spm = newSPM(t)
	} else {
		t.wpm = newWPM(t)
	}
	if err := t.loadSpecialIDs(f); err != nil {
		return nil, err
	}
	if t.chatTemplate, err = optString(f, "tokenizer.chat_template", ""); err != nil {
		return nil, err
	}
	t.findEOG(f)
	t.buildSpecials(f)
	t.buildPieces()
	return t, nil
}

func optString(f *gguf.File, key, def string) (string, error) {
	s, err := f.String(key)
	if errors.Is(err, gguf.ErrNoKey) {
		return def, nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s, nil
}

func optBool(f *gguf.File, key string, def bool) (bool, error) {
	b, err := f.Bool(key)
	if errors.Is(err, gguf.ErrNoKey) {
		return def, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return b, nil
}

// loadTokens reads the token list, scores and types and builds the
// text-to-id map (a later duplicate wins, as in llama.cpp).
func (t *Tokenizer) loadTokens(f *gguf.File) error {
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if errors.Is(err, gguf.ErrNoKey) {
		return ErrNoTokenizer
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(toks) == 0 {
		return fmt.Errorf("%w: tokenizer.ggml.tokens is empty", ErrInvalid)
	}
	if len(toks) > 1<<30 {
		return fmt.Errorf("%w: %d tokens", ErrInvalid, len(toks))
	}
	n := len(toks)
	t.tokens = make([]string, n)
	t.ids = make(map[string]int32, n)
	for i, s := range toks {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]" // an empty token could match anywhere
		}
		t.tokens[i] = s
		t.ids[s] = int32(i)
	}
	t.scores = make([]float32, n)
	if sc, err := f.Float32s("tokenizer.ggml.scores"); err == nil {
		if len(sc) != n {
			return fmt.Errorf("%w: %d scores for %d tokens", ErrInvalid, len(sc), n)
		}
		copy(t.scores, sc)
	} else if !errors.Is(err, gguf.ErrNoKey) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	t.types = make([]tokenType, n)
	for i := range t.types {
		t.types[i] = typeNormal
	}
	if ty, err := f.Int32s("tokenizer.ggml.token_type"); err == nil {
		if len(ty) != n {
			return fmt.Errorf("%w: %d token types for %d tokens", ErrInvalid, len(ty), n)
		}
		for i, v := range ty {
			if v >= int32(typeNormal) && v <= int32(typeByte) {
				t.types[i] = tokenType(v)
			} else {
				t.types[i] = typeUndefined
			}
		}
	} else if !errors.Is(err, gguf.ErrNoKey) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// loadSpecialIDs applies the special-token and add_* keys over the defaults.
// An out-of-range id keeps the default, like llama.cpp; a default that does
// not exist in a small vocabulary becomes -1.
func (t *Tokenizer) loadSpecialIDs(f *gguf.File) error {
	for _, s := range []struct {
		key string
		id  *int32
	}{
		{"tokenizer.ggml.bos_token_id", &t.bos},
		{"tokenizer.ggml.eos_token_id", &t.eos},
		{"tokenizer.ggml.unknown_token_id", &t.unk},
		{"tokenizer.ggml.seperator_token_id", &t.sep}, // sic: the GGUF key is misspelt
		{"tokenizer.ggml.cls_token_id", &t.bos},       // WordPiece starts with [CLS]
	} {
		v, err := f.Int(s.key)
		if errors.Is(err, gguf.ErrNoKey) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if v >= 0 && v < int64(len(t.tokens)) {
			*s.id = int32(v)
		}
	}
	for _, id := range []*int32{&t.bos, &t.eos, &t.unk, &t.sep} {
		if *id >= int32(len(t.tokens)) {
			*id = -1
		}
	}
	var err error
	if t.addBOS, err = optBool(f, "tokenizer.ggml.add_bos_token", t.addBOS); err != nil {
		return err
	}
	if t.addEOS, err = optBool(f, "tokenizer.ggml.add_eos_token", t.addEOS); err != nil {
		return err
	}
	if t.addSEP, err = optBool(f, "tokenizer.ggml.add_sep_token", t.addSEP); err != nil {
		return err
	}
	if t.kind == kindSPM {
		if t.addSpacePrefix, err = optBool(f, "tokenizer.ggml.add_space_prefix", t.addSpacePrefix); err != nil {
			return err
		}
	}
	return nil
}

// eogTexts are the end-of-turn markers llama.cpp recognises by text (its
// EOT/EOM list, DeepSeek's end of sentence, and the fill-in-the-middle
// pad/repo/file-separator markers after which a code model is done).
var eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
	"<｜end▁of▁sentence｜>", // <｜end▁of▁sentence｜>
	"<|fim_pad|>", "<fim-pad>", "<PAD>", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<|file_sep|>"}

// eogKeys name end-of-generation tokens explicitly.
var eogKeys = []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
	"tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id"}

// findEOG collects the end-of-generation ids: EOS, the ids named by
// eogKeys, and tokens whose text is a known end-of-turn marker. Like
// llama.cpp, such a token is treated as a control token even if the file
// says otherwise, so it is never produced from plain text.
func (t *Tokenizer) findEOG(f *gguf.File) {
	t.eog = map[int32]bool{}
	if t.eos >= 0 {
		t.eog[t.eos] = true
	}
	for _, key := range eogKeys {
		if v, err := f.Int(key); err == nil && v >= 0 && v < int64(len(t.tokens)) {
			t.eog[int32(v)] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := t.ids[s]; ok {
			t.eog[id] = true
			t.types[id] = typeControl
		}
	}
}

// buildSpecials lists the tokens matched as whole strings, longest first
// (the order llama.cpp partitions text in), and the strip rules.
func (t *Tokenizer) buildSpecials(f *gguf.File) {
	for id, ty := range t.types {
		if ty == typeControl || ty == typeUserDefined || ty == typeUnknown {
			t.specials = append(t.specials, int32(id))
		}
	}
	sort.SliceStable(t.specials, func(i, j int) bool {
		return len(t.tokens[t.specials[i]]) > len(t.tokens[t.specials[j]])
	})
	t.rstrip, t.lstrip = map[int32]bool{}, map[int32]bool{}
	name, _ := optString(f, "general.name", "")
	name = strings.ToLower(name)
	if strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		// Phi-3's chat markers swallow the whitespace after them.
		for _, id := range t.specials {
			t.rstrip[id] = true
		}
		if id, ok := t.ids["</s>"]; ok {
			t.rstrip[id] = true
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.ids[s]; ok {
				delete(t.rstrip, id)
			}
		}
	}
}
