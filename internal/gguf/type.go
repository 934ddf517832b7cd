package gguf

import "fmt"

// Type is a tensor element type, numbered as in GGML. It is also the KV-cache
// element type everywhere in bulkhead (F16 or F32).
type Type uint32

// Tensor types, numbered as GGML numbers them in files. The gguf package
// knows the block layout of every type GGML defines, so that a valid file
// always parses; whether bulkhead can compute with a type is the kernels'
// business (kernels.Supports), and a file with a type that parses but has no
// kernels is "unsupported", not "malformed".
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

type typeTraits struct {
	name       string
	blockElems int // elements per block
	blockBytes int // bytes per block
}

// traits is GGML's table of block layouts (ggml.c type_traits), indexed by
// type; numbers GGML has retired (4, 5, 31–33, 36–38) have no name, and a
// file using one is malformed. An array and not a map: the kernels ask a
// matrix's row size in every work item of every product (a map lookup was
// a fifth of a decode step's fixed cost).
var traits = [...]typeTraits{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", 32, 18},   // f16 scale + 16 bytes of nibbles
	Q4_1:    {"Q4_1", 32, 20},   // f16 scale, f16 min, 16 bytes of nibbles
	Q5_0:    {"Q5_0", 32, 22},   // f16 scale, 4 bytes high bits, 16 bytes nibbles
	Q5_1:    {"Q5_1", 32, 24},   // f16 scale, f16 min, 4 bytes high bits, 16 bytes nibbles
	Q8_0:    {"Q8_0", 32, 34},   // f16 scale + 32 int8
	Q8_1:    {"Q8_1", 32, 36},   // f16 scale, f16 sum, 32 int8
	Q2_K:    {"Q2_K", 256, 84},  // 16 scale bytes, 64 bytes of 2-bit values, f16 d, f16 dmin
	Q3_K:    {"Q3_K", 256, 110}, // 32 bytes high bits, 64 bytes low 2 bits, 12 scale bytes, f16 d
	Q4_K:    {"Q4_K", 256, 144}, // f16 d, f16 dmin, 12 bytes scales, 128 bytes nibbles
	Q5_K:    {"Q5_K", 256, 176}, // f16 d, f16 dmin, 12 bytes scales, 32 bytes high bits, 128 bytes nibbles
	Q6_K:    {"Q6_K", 256, 210}, // 128 low bytes, 64 high bytes, 16 int8 scales, f16 d
	Q8_K:    {"Q8_K", 256, 292}, // f32 d, 256 int8, 16 int16 sums
	IQ2_XXS: {"IQ2_XXS", 256, 66},
	IQ2_XS:  {"IQ2_XS", 256, 74},
	IQ3_XXS: {"IQ3_XXS", 256, 98},
	IQ1_S:   {"IQ1_S", 256, 50},
	IQ4_NL:  {"IQ4_NL", 32, 18}, // f16 scale + 16 bytes of nibbles indexing a fixed table
	IQ3_S:   {"IQ3_S", 256, 110},
	IQ2_S:   {"IQ2_S", 256, 82},
	IQ4_XS:  {"IQ4_XS", 256, 136}, // f16 d, u16 high scale bits, 4 bytes low scale bits, 128 bytes nibbles
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", 256, 56},
	BF16:    {"BF16", 1, 2},
	TQ1_0:   {"TQ1_0", 256, 54},
	TQ2_0:   {"TQ2_0", 256, 66},
	MXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether GGML defines type t, so that its tensors' sizes can
// be computed and a file holding them is well formed. It says nothing about
// whether bulkhead can compute with t.
func (t Type) Known() bool { _, ok := t.traits(); return ok }

// traits is t's row of the table, and whether GGML defines t.
func (t Type) traits() (typeTraits, bool) {
	if uint64(t) >= uint64(len(traits)) || traits[t].name == "" {
		return typeTraits{}, false
	}
	return traits[t], true
}

func (t Type) String() string {
	if tr, ok := t.traits(); ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockElems is the number of elements in one quantization block (1 for
// plain float types). It is 0 for an unknown type.
func (t Type) BlockElems() int { tr, _ := t.traits(); return tr.blockElems }

// BlockBytes is the encoded size of one block. It is 0 for an unknown type.
func (t Type) BlockBytes() int { tr, _ := t.traits(); return tr.blockBytes }

// RowBytes returns the encoded size of n elements of type t, or an error if
// t is unknown or n is not a whole number of blocks.
func (t Type) RowBytes(n int) (int, error) {
	tr, ok := t.traits()
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %s", t)
	}
	if n < 0 || n%tr.blockElems != 0 {
		return 0, fmt.Errorf("gguf: %d elements of %s is not a whole number of %d-element blocks", n, t, tr.blockElems)
	}
	return n / tr.blockElems * tr.blockBytes, nil
}
