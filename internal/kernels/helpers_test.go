package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

var allTypes = []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K}

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
	data, err := Quantize(typ, randVec(r, rows*cols, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameBits(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
