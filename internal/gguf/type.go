package gguf

import "fmt"

// Type is a tensor element type, numbered as in GGML. It is also the KV-cache
// element type everywhere in bulkhead (F16 or F32).
type Type uint32

// Tensor types bulkhead reads. The numbers are GGML's and appear in files.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q8_0 Type = 8
	Q4_K Type = 12
	Q6_K Type = 14
	BF16 Type = 30
)

type typeTraits struct {
	name       string
	blockElems int // elements per block
	blockBytes int // bytes per block
}

var traits = map[Type]typeTraits{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18},   // f16 scale + 16 bytes of nibbles
	Q8_0: {"Q8_0", 32, 34},   // f16 scale + 32 int8
	Q4_K: {"Q4_K", 256, 144}, // f16 d, f16 dmin, 12 bytes scales, 128 bytes nibbles
	Q6_K: {"Q6_K", 256, 210}, // 128 low bytes, 64 high bytes, 16 int8 scales, f16 d
}

// Known reports whether bulkhead can read tensors of type t.
func (t Type) Known() bool { _, ok := traits[t]; return ok }

func (t Type) String() string {
	if tr, ok := traits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockElems is the number of elements in one quantization block (1 for
// plain float types). It is 0 for an unknown type.
func (t Type) BlockElems() int { return traits[t].blockElems }

// BlockBytes is the encoded size of one block. It is 0 for an unknown type.
func (t Type) BlockBytes() int { return traits[t].blockBytes }

// RowBytes returns the encoded size of n elements of type t, or an error if
// t is unknown or n is not a whole number of blocks.
func (t Type) RowBytes(n int) (int, error) {
	tr, ok := traits[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unsupported tensor type %s", t)
	}
	if n < 0 || n%tr.blockElems != 0 {
		return 0, fmt.Errorf("gguf: %d elements of %s is not a whole number of %d-element blocks", n, t, tr.blockElems)
	}
	return n / tr.blockElems * tr.blockBytes, nil
}
