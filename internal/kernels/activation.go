package kernels

import (
	"math"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// activation is the right-hand side of one MatMul: batch tokens of cols
// values, kept as float32 for float weights, or quantized once per token the
// way ggml's CPU backend quantizes them for that weight type (so every row's
// dot product reuses it, and the integer sums are the ones llama.cpp forms):
//
//   - Q8_0 blocks of 32 (Q4_0, Q5_0, Q8_0, IQ4_NL weights): d = max|x|/127
//     stored as F16, q = round-half-even(x × 127/max|x|), as ggml's AVX2
//     quantize_row_q8_0.
//   - Q8_1 blocks of 32 (Q4_1, Q5_1): the Q8_0 block plus s = d×Σq rounded
//     to F16 (d before its own rounding), as quantize_row_q8_1.
//   - Q8_K blocks of 256 (the K-quants and IQ4_XS): m the first element of
//     largest magnitude, iscale = −127/m, q = min(127, round-half-even(
//     iscale×x)), d = 1/iscale in float32, and the sums of each 16 q
//     (bsum), as quantize_row_q8_K.
//
// The F16 scales are kept here as the float32 they widen to, which is what
// ggml multiplies with. Quantization is per token and deterministic: a
// token's blocks depend only on its own values, never on the batch around
// it (I8). Blocks holding a NaN or an infinity, or whose scale (or 1/scale)
// is not finite, become all zeros with d = 0 (ggml would produce garbage).
type activation struct {
	batch, cols int
	x           []float32 // float weights: the input itself

	// Quantized weights: block is 32 (Q8_0/Q8_1) or 256 (Q8_K).
	block int
	qs    []int8    // batch*cols values, value ≈ d[block] × qs
	d     []float32 // one scale per block
	s     []float32 // Q8_1 only: d × Σ qs of each block, F16-rounded
	bsum  []int16   // Q8_K: sum of qs over each 16 values (|sum| ≤ 2032)
	xs    []int32   // Q8_0 for q8pDot4Z: −128 × Σ qs of each block, else empty

	// dT holds, for each full group of eight tokens k, their block scales
	// transposed: dT[k*nb*8 + b*8 + t] = d[(8k+t)*nb + b] (32-blocks only),
	// so a kernel loads the eight scales of a block with one load.
	dT []float32

	gp gemmPack // the prefill tiles' layout (gemm.go)
}

// actBlock is the activation block size for weight type t, or 0 when t's
// weights multiply float activations.
func actBlock(t gguf.Type) int {
	switch t {
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.IQ4_NL, gguf.Q4_1, gguf.Q5_1:
		return 32
	case gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS:
		return 256
	}
	return 0
}

// usesQ8_1 reports whether t's weights (which carry a min) meet Q8_1
// activations, whose s term multiplies the min.
func usesQ8_1(t gguf.Type) bool { return t == gguf.Q4_1 || t == gguf.Q5_1 }

// actFree recycles activations and their buffers between MatMuls.
var actFree freeList[activation]

func getActivation() *activation { return actFree.get() }

// putActivation returns a for reuse; a must not be used after.
func putActivation(a *activation) { actFree.put(a) }

// prepareActivation builds the activation of x for weights of type t.
// With a pool it quantizes with the assembly (when present), K-quant
// batches spread over the pool's threads; without one (the reference) it
// runs the Go code on the caller. Both give the same bits, because a
// token's quantization depends only on that token. Release the result with
// putActivation.
func prepareActivation(t gguf.Type, x []float32, batch, cols int, p *Pool) *activation {
	a := getActivation()
	a.batch, a.cols, a.x = batch, cols, x[:batch*cols]
	a.block = actBlock(t)
	a.s, a.xs = a.s[:0], a.xs[:0]
	if a.block == 0 {
		return a
	}
	n := batch * cols
	a.qs = grow(a.qs, n)
	a.d = grow(a.d, n/a.block)
	if a.block == 32 && usesQ8_1(t) {
		a.s = grow(a.s, n/32)
	}
	if t == gguf.Q8_0 && batch >= 4 && wantsQ8Sums() {
		a.xs = grow(a.xs, n/32)
	}
	// A prefill batch is quantized one token per work item over the pool
	// (a token's blocks depend only on that token): done on the caller, it
	// was ~10% of a 135M Q8_0 pp512 profile with the other thread idle.
	par := p != nil && batch >= 8 && p.threads > 1
	switch {
	case par:
		p.mu.Lock()
		p.qa = qaJob{x: x, a: a}
		p.parallelLocked(batch, p.qaFn)
		p.qa = qaJob{}
		p.mu.Unlock()
	case a.block == 256 && p == nil:
		quantizeQ8KBlocks(x[:n], a.qs, a.d)
	case a.block == 256:
		quantizeQ8KFast(x[:n], a.qs, a.d) // gemm_q8k_*.go
	case p == nil:
		quantizeBlocksRef(x[:n], a.qs, a.d)
	default:
		quantizeBlocks(x[:n], a.qs, a.d)
	}
	if a.block == 32 && !par {
		roundQ8Scales(a.qs, a.d, a.s)
		if len(a.xs) > 0 {
			q8BlockSums(a.qs[:n], a.xs)
		}
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

// qaJob quantizes one token per item of a prefill batch (its blocks, their
// F16-rounded scales and, for q8pDot4Z, their sums); it lives in the pool
// so the call needs no closure.
type qaJob struct {
	x []float32
	a *activation
}

func (j *qaJob) item(b int) {
	a := j.a
	lo, hi := b*a.cols, (b+1)*a.cols
	nb := a.cols / a.block
	qs, d := a.qs[lo:hi], a.d[b*nb:(b+1)*nb]
	if a.block == 256 {
		quantizeQ8KFast(j.x[lo:hi], qs, d)
		return
	}
	quantizeBlocks(j.x[lo:hi], qs, d)
	var s []float32
	if len(a.s) > 0 {
		s = a.s[b*nb : (b+1)*nb]
	}
	roundQ8Scales(qs, d, s)
	if len(a.xs) > 0 {
		q8BlockSums(qs, a.xs[b*nb:(b+1)*nb])
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantizeActBlock maps one 32-value block x to int8 in [-127,127] as ggml's
// AVX2 quantize_row_q8_0 does, and returns the scale before its F16
// rounding (roundQ8Scales does that, and derives Q8_1's s from it):
// d = max|x|/127, q = round-half-even(x × (127/max|x|)). The assembly
// (quantizeQ8AVX) computes the same bits.
func quantizeActBlock(q []int8, x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v)))) // max propagates NaN
	}
	d := amax / 127
	id := 127 / amax
	if d == 0 || !finite(d) || math.IsInf(float64(id), 0) {
		clear(q)
		return 0
	}
	for i, v := range x {
		r := math.RoundToEven(float64(v * id))
		q[i] = int8(max(-127, min(127, r)))
	}
	return d
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// quantizeBlocksRef quantizes consecutive 32-value blocks of x (see
// quantizeActBlock).
func quantizeBlocksRef(x []float32, qs []int8, d []float32) {
	for b := range len(x) / 32 {
		lo, hi := b*32, (b+1)*32
		d[b] = quantizeActBlock(qs[lo:hi], x[lo:hi])
	}
}

// roundQ8Scales stores each block scale as ggml's ggml_half does (F16,
// nearest even), and for Q8_1 (len(s) > 0) s = F16(d × Σq) with the
// unrounded d. A block whose F16 scale overflows becomes zeros.
func roundQ8Scales(qs []int8, d, s []float32) {
	for b, v := range d {
		h := F32ToF16(v)
		if h&0x7fff == 0x7c00 {
			clear(qs[32*b : 32*b+32])
			d[b] = 0
			v = 0
			h = 0
		}
		d[b] = F16ToF32(h)
		if len(s) > 0 {
			var sum int32
			for _, q := range qs[32*b : 32*b+32] {
				sum += int32(q)
			}
			s[b] = F16ToF32(F32ToF16(v * float32(sum)))
		}
	}
}

// quantizeQ8KBlocks quantizes consecutive 256-value blocks of x as ggml's
// quantize_row_q8_K: d may be negative (its sign is that of −m), which
// changes no product.
func quantizeQ8KBlocks(x []float32, qs []int8, d []float32) {
	for b := range len(x) / 256 {
		d[b] = quantizeQ8KBlock(qs[256*b:256*b+256], x[256*b:256*b+256])
	}
}

func quantizeQ8KBlock(q []int8, x []float32) float32 {
	var amax, m float32
	for _, v := range x {
		if !finite(v) {
			clear(q)
			return 0
		}
		if ax := float32(math.Abs(float64(v))); ax > amax {
			amax, m = ax, v
		}
	}
	iscale := -127 / m
	if amax == 0 || math.IsInf(float64(iscale), 0) {
		clear(q)
		return 0
	}
	for i, v := range x {
		r := math.RoundToEven(float64(iscale * v))
		q[i] = int8(max(-128, min(127, r)))
	}
	return 1 / iscale
}
