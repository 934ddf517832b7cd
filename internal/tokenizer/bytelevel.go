package tokenizer

import "unicode/utf8"

// Byte-level BPE (GPT-2) spells every byte as a printable character so that
// vocabularies and merges can be stored as text: bytes that are printable
// Latin-1 stand for themselves, the others (controls, space, DEL, NBSP, soft
// hyphen) are shifted to U+0100 onwards in byte order.
var (
	byteRune   [256]rune
	runeByte   = map[rune]byte{}
	byteString [256]string
)

func init() {
	shift := rune(0)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = 256 + shift
			shift++
		}
		byteRune[b] = r
		runeByte[r] = byte(b)
		byteString[b] = string(r)
	}
}

// appendByteLevel appends the byte-level spelling of s to dst.
func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = utf8.AppendRune(dst, byteRune[s[i]])
	}
	return dst
}

// appendByteLevelDecoded appends the bytes a byte-level token text spells.
// Characters outside the byte alphabet are kept as their UTF-8.
func appendByteLevelDecoded(out []byte, s string) []byte {
	for _, r := range s {
		if b, ok := runeByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}
