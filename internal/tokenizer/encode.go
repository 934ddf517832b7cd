package tokenizer

import "strings"

// fragment is a piece of the input: raw text still to tokenize, or a special
// token already recognised (id >= 0).
type fragment struct {
	text string
	id   int32
}

// Encode tokenizes text. With addSpecial it adds BOS and EOS as the
// vocabulary's metadata says (tokenizer.ggml.add_bos_token/add_eos_token,
// else llama.cpp's per-kind default: SentencePiece adds BOS, byte-level BPE
// adds it only for Llama 3 style vocabularies). With parseSpecial, the text
// of control tokens ("<|im_end|>", "<s>") becomes their id; user-defined
// tokens are always matched. WordPiece vocabularies get [CLS] … [SEP]
// with addSpecial. Invalid UTF-8 never panics; byte-level and SentencePiece
// vocabularies keep each invalid byte (as a byte token).
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	return t.encodeFragments(t.partition(text, parseSpecial), len(text), addSpecial)
}

// encodeFragments tokenizes partitioned text; sizeHint is its length in bytes.
func (t *Tokenizer) encodeFragments(frags []fragment, sizeHint int, addSpecial bool) []int32 {
	out := make([]int32, 0, sizeHint/3+2)
	if addSpecial && t.addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	prevSpecial := true // SentencePiece prefixes a space at the start and after a special token
	for _, fr := range frags {
		if fr.id >= 0 {
			out = append(out, fr.id)
			prevSpecial = true
			continue
		}
		switch t.kind {
		case kindSPM:
			out = t.spm.encode(out, fr.text, t.addSpacePrefix && prevSpecial)
		case kindBPE:
			out = t.bpe.encode(out, fr.text)
		case kindWPM:
			out = t.wpm.encode(out, fr.text)
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS && t.eos >= 0 {
		out = append(out, t.eos)
	}
	if addSpecial && t.addSEP && t.sep >= 0 {
		out = append(out, t.sep)
	}
	return out
}

// partition splits text on special-token text, trying the longest tokens
// first over the whole text (llama.cpp's order). Control and unknown tokens
// are only matched when parseSpecial is set.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, id: -1}}
	for _, id := range t.specials {
		ty := t.types[id]
		if !parseSpecial && ty != typeUserDefined {
			continue
		}
		tok := t.tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		frags = t.splitOn(frags, id, tok)
	}
	return frags
}

// splitOn replaces every occurrence of tok in the raw fragments by the token.
func (t *Tokenizer) splitOn(frags []fragment, id int32, tok string) []fragment {
	out := make([]fragment, 0, len(frags)+2)
	for _, fr := range frags {
		if fr.id >= 0 {
			out = append(out, fr)
			continue
		}
		s := fr.text
		for {
			i := strings.Index(s, tok)
			if i < 0 {
				break
			}
			left := s[:i]
			if t.lstrip[id] {
				left = strings.TrimRight(left, asciiSpace)
			}
			if left != "" {
				out = append(out, fragment{text: left, id: -1})
			}
			out = append(out, fragment{id: id})
			s = s[i+len(tok):]
			if t.rstrip[id] {
				s = strings.TrimLeft(s, asciiSpace)
			}
		}
		if s != "" {
			out = append(out, fragment{text: s, id: -1})
		}
	}
	return out
}

// asciiSpace is what C's isspace accepts, which llama.cpp strips with.
const asciiSpace = " \t\n\v\f\r"
