package kernels

import (
	"math"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// activation is the right-hand side of one MatMul: batch tokens of cols
// values, kept as float32 for float weights, or quantized once per token to
// int8 blocks for quantized weights (so every row's dot product reuses it).
//
// Quantization is per token and deterministic: a token's blocks depend only
// on its own values, never on the batch around it (I8).
type activation struct {
	batch, cols int
	x           []float32 // float weights: the input itself

	// Quantized weights: block is 32 (Q8_0, Q4_0) or 256 (K-quants).
	block int
	qs    []int8    // batch*cols values, value ≈ d[block] × qs
	d     []float32 // one scale per block
	bsum  []int16   // K-quants: sum of qs over each 16 values (|sum| ≤ 2032)

	// dT holds, for each full group of eight tokens k, their block scales
	// transposed: dT[k*nb*8 + b*8 + t] = d[(8k+t)*nb + b] (Q8_0/Q4_0 only),
	// so a kernel loads the eight scales of a block with one load.
	dT []float32
}

// actBlock is the activation block size for weight type t, or 0 when t's
// weights multiply float activations.
func actBlock(t gguf.Type) int {
	switch t {
	case gguf.Q8_0, gguf.Q4_0:
		return 32
	case gguf.Q4_K, gguf.Q6_K:
		return 256
	}
	return 0
}

var actPool = sync.Pool{New: func() any { return new(activation) }}

// prepareActivation builds the activation of x for weights of type t.
// With a pool it quantizes with the assembly (when present), K-quant
// batches spread over the pool's threads; without one (the reference) it
// runs the Go code on the caller. Both give the same bits, because a
// token's quantization depends only on that token. Release the result with
// actPool.Put.
func prepareActivation(t gguf.Type, x []float32, batch, cols int, p *Pool) *activation {
	a := actPool.Get().(*activation)
	a.batch, a.cols, a.x = batch, cols, x[:batch*cols]
	a.block = actBlock(t)
	if a.block == 0 {
		return a
	}
	n := batch * cols
	a.qs = grow(a.qs, n)
	a.d = grow(a.d, n/a.block)
	switch {
	case p == nil:
		quantizeBlocksRef(a.block, x[:n], a.qs, a.d)
	case a.block == 256 && batch >= 8 && p.threads > 1:
		p.mu.Lock()
		p.qa = qaJob{x: x, a: a}
		p.parallelLocked(batch, p.qaFn)
		p.qa = qaJob{}
		p.mu.Unlock()
	default:
		quantizeBlocks(a.block, x[:n], a.qs, a.d)
	}
	if a.block == 32 && batch >= 8 {
		nb := cols / 32
		a.dT = grow(a.dT, batch/8*nb*8)
		for k := 0; k < batch/8; k++ {
			for b := 0; b < nb; b++ {
				for t := 0; t < 8; t++ {
					a.dT[k*nb*8+b*8+t] = a.d[(8*k+t)*nb+b]
				}
			}
		}
	}
	if a.block == 256 {
		a.bsum = grow(a.bsum, n/16)
		for g := 0; g < n/16; g++ {
			var s int16
			for _, q := range a.qs[16*g : 16*g+16] {
				s += int16(q)
			}
			a.bsum[g] = s
		}
	}
	return a
}

// qaJob quantizes one token per item of a K-quant activation; it lives in
// the pool so the call needs no closure.
type qaJob struct {
	x []float32
	a *activation
}

func (j *qaJob) item(b int) {
	cols, nb := j.a.cols, j.a.cols/256
	quantizeBlocks(256, j.x[b*cols:(b+1)*cols], j.a.qs[b*cols:(b+1)*cols], j.a.d[b*nb:(b+1)*nb])
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantizeActBlock maps x to int8 in [-127,127] with one float32 scale
// (kept in full precision, unlike a stored Q8_0 block) and returns it:
// d = max|x|/127, q = round-half-even(x × (1/d)). A block whose d is 0 or not
// finite, whose 1/d overflows, or that holds a NaN becomes all zeros with
// d = 0. The assembly (quantizeQ8AVX) computes the same bits.
func quantizeActBlock(q []int8, x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v)))) // max propagates NaN
	}
	d := amax / 127
	id := 1 / d
	if d == 0 || math.IsNaN(float64(d)) || math.IsInf(float64(d), 0) || math.IsInf(float64(id), 0) {
		for i := range q {
			q[i] = 0
		}
		return 0
	}
	for i, v := range x {
		r := math.RoundToEven(float64(v * id))
		q[i] = int8(max(-127, min(127, r)))
	}
	return d
}

// quantizeBlocksRef quantizes consecutive blocks of x (see quantizeActBlock).
func quantizeBlocksRef(block int, x []float32, qs []int8, d []float32) {
	for b := range len(x) / block {
		lo, hi := b*block, (b+1)*block
		d[b] = quantizeActBlock(qs[lo:hi], x[lo:hi])
	}
}
