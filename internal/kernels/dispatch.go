package kernels

import "github.com/bulkhead-llm/bulkhead/internal/gguf"

// kernelSet is one implementation of every hot operation. The package picks
// one at initialisation (impl) and never re-decides per call.
type kernelSet struct {
	name          string
	dot           func(a, b []float32) float32
	axpy          func(y []float32, a float32, x []float32)
	dotF16        func(a []uint16, b []float32) float32
	axpyF16       func(y []float32, a float32, x []uint16)
	f32ToF16Slice func(dst []uint16, src []float32)
	softmax       func(x []float32)
	swiglu        func(out, gate, up []float32)
	// rows returns the row kernel for weights of type t with cols columns.
	rows func(t gguf.Type, cols int) rowKernel
}

// rowKernel computes out[b*m.Rows+r] for rows [r0,r1) and every token of a.
type rowKernel func(out []float32, m *Matrix, a *activation, r0, r1 int)

var refKernels = kernelSet{
	name:          "go",
	dot:           dotRef,
	axpy:          axpyRef,
	dotF16:        dotF16Ref,
	axpyF16:       axpyF16Ref,
	f32ToF16Slice: f32ToF16SliceRef,
	softmax:       softmaxRef,
	swiglu:        swigluRef,
	rows:          func(gguf.Type, int) rowKernel { return rowsRef },
}

// impl is the kernel set in use; set once by init (see cpu_*.go).
var impl = refKernels

// Implementation names the kernel set in use ("avx512", "avx2" or "go").
func Implementation() string { return impl.name }
