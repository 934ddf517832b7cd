package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// quantTypes are the types Quantize encodes; allTypes adds those whose test
// matrices are random blocks (randBlocks).
var quantTypes = []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K}

var allTypes = []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K,
	gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.IQ4_NL, gguf.Q2_K, gguf.Q3_K, gguf.Q5_K, gguf.IQ4_XS}

// f16Fields are the byte offsets of the F16 scales (and mins) inside one
// block of the types Quantize does not encode.
var f16Fields = map[gguf.Type][]int{
	gguf.Q4_1: {0, 2}, gguf.Q5_0: {0}, gguf.Q5_1: {0, 2}, gguf.IQ4_NL: {0},
	gguf.Q2_K: {80, 82}, gguf.Q3_K: {108}, gguf.Q5_K: {0, 2}, gguf.IQ4_XS: {0},
}

// randBlocks encodes rows×cols random weights of a type Quantize does not
// encode: random quant bits, F16 scales of random sign and magnitude
// 2^-8..2^-4 (so weights stay near the unit range).
func randBlocks(r *rand.Rand, typ gguf.Type, rows, cols int) []byte {
	return randBlocksWith(r, typ, rows, cols, f16Fields[typ])
}

// randBlocksWith is randBlocks with the F16 fields of one block given.
func randBlocksWith(r *rand.Rand, typ gguf.Type, rows, cols int, fields []int) []byte {
	rb, _ := typ.RowBytes(cols)
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	bb := typ.BlockBytes()
	for b := 0; b < len(data)/bb; b++ {
		for _, off := range fields {
			v := float32(math.Ldexp(1+r.Float64(), -8+r.IntN(4)))
			if r.IntN(2) == 0 {
				v = -v
			}
			binary.LittleEndian.PutUint16(data[bb*b+off:], F32ToF16(v))
		}
	}
	return data
}

// short reports whether the run should be lighter (the -race pass).
func short() bool { return testing.Short() || os.Getenv("BULKHEAD_SHORT") == "1" }

func randVec(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * scale
	}
	return v
}

// randMatrix quantizes a random rows×cols matrix of type t.
func randMatrix(t interface {
	Helper()
	Fatal(args ...any)
}, r *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	t.Helper()
	var data []byte
	if _, ok := f16Fields[typ]; ok {
		data = randBlocks(r, typ, rows, cols)
	} else {
		var err error
		if data, err = Quantize(typ, randVec(r, rows*cols, 0.5)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameBits(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
