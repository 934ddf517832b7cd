//go:build amd64 && !noasm

package kernels

import (
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"golang.org/x/sys/cpu"
)

//go:noescape
func gemmQ40x16(w *byte, rowBytes int, xp *byte, d16 *float32, nb int, out *float32, stride int)

//go:noescape
func gemmQ40x8(w *byte, rowBytes int, xp *byte, d16 *float32, nb int, out *float32, stride int)

//go:noescape
func gemmPackQ8Pair(dst *byte, s0, s1 *int8, nb, step int)

//go:noescape
func gemmPackFPair(dst *float32, s0, s1 *float32, n8, step int)

//go:noescape
func gemmF16x8(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)

//go:noescape
func gemmBF16x8(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)

//go:noescape
func gemmF16x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)

//go:noescape
func gemmBF16x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)

//go:noescape
func gemmF32x12(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)

//go:noescape
func gemmF32x8(w *byte, rowBytes int, xp *float32, n8 int, out *float32, stride int)

// The tiles' CPU features, decided once. gemmQ8 needs VNNI (VPDPBUSD)
// and BW/VL for the byte and 256-bit EVEX forms; the float tiles need F
// and VL (VCVTPH2PS zmm is AVX512F).
var (
	gemmHasQ8 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI
	gemmHasF  = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
)

// gemmEnabled switches the tiles off (tests compare both paths).
var gemmEnabled = true

// gemmVariant names the prefill tiles in use, for Variants; the row
// kernels named after it then serve only what the tiles leave (up to 16
// tokens, ragged rows and tokens, other types).
func gemmVariant() string {
	var s string
	if gemmEnabled && gemmHasQ8 {
		s += "Q4_0 avx512-vnni 2x16 (2x8 below 16 tokens), Q4_K/Q6_K avx512-vnni 1x16 on unpacked rows, "
	}
	if gemmEnabled && gemmHasF {
		s += "F16/BF16/F32 avx512 4x12 (6x8 below 12 tokens), "
	}
	if s == "" {
		return ""
	}
	return "gemm tiles (F16/BF16/F32 and Q4_0 from 8 tokens, Q4_K/Q6_K from 17): " + s[:len(s)-2] + "; row kernels: "
}

// gemmMinBatch is the smallest batch of type t the gemm tiles take. A
// batched decode step of one full token group is already a GEMM for the
// float (8-token) and Q4_0 (16-token, and below 16 the 8-token
// gemmQ40x8) tiles; Q4_K and Q6_K keep their four-token row kernels through
// 16 tokens. Measured one thread on 1536×2048 (BenchmarkGemmSmallBatch,
// GFLOP/cpu-s, rows → tiles; measured when Q8_0 had these tiles): Q8_0 at 8 tokens 47–51 → 69–78, at 16 51 →
// 90–117; F16 at 8 40 → 74 and at 16 43 → 78; Q4_K at 16 75 → 70.
// On an AVX-512 VNNI host the Q4_K tile wins the microbenchmark at 16
// tokens (80–125 → 137–155) yet loses the whole step: bench kernels
// --decode-seqs 16 on a 1B Q4_K_M fell from 101–110 to 95–96 tokens/s
// with Q4_K and Q6_K tiles at 16, and to 101–103 with Q4_K alone, so
// 16-sequence decode stays on the fused rows, which keep each row in cache.
func gemmMinBatch(t gguf.Type) int {
	switch t {
	case gguf.F16, gguf.BF16, gguf.F32, gguf.Q4_0:
		return 8
	}
	return kFusedMaxBatch + 1
}

// gemmRows returns the kernel MatMul runs over a: the gemm tiles for the
// full token groups of a prefill-sized batch (with base finishing the
// rest), or base itself. It lays a's activations out for the tile, so it
// runs once per MatMul, before the rows are shared out.
func gemmRows(t gguf.Type, a *activation, base rowKernel) rowKernel {
	a.gp.groups = 0
	if !gemmEnabled || a.batch < gemmMinBatch(t) || impl.name == refKernels.name {
		return base
	}
	switch {
	case t == gguf.Q4_0 && gemmHasQ8:
		gemmPackQ8(a)
		gemmViews(a, a.gp.group, base)
		a.gp.rows = 2
		return rowsGemmQ8
	case (t == gguf.Q4_K || t == gguf.Q6_K) && gemmHasQ8:
		gemmPackK(a, t == gguf.Q6_K)
		gemmViews(a, 16, base)
		a.gp.rows = 1
		return rowsGemmK
	case (t == gguf.F16 || t == gguf.BF16 || t == gguf.F32) && gemmHasF && a.cols >= 8:
		// Four rows × twelve tokens where it leaves the row kernels
		// no more work than six rows × eight (floatGroup): each row's
		// widened weights meet six token pairs instead of four
		// (BenchmarkGemm, one thread: F16 100–103 → 122–124, F32 90–91 →
		// 109–111 GFLOP/cpu-s).
		a.gp.group, a.gp.rows = 8, 6
		if floatGroup(a.batch) == 12 {
			a.gp.group, a.gp.rows = 12, 4
		}
		gemmPackF(a)
		gemmViews(a, a.gp.group, base)
		return rowsGemmF
	}
	return base
}

// floatGroup picks the float tiles' token group for a batch of at least
// eight: 12 or 8, whichever leaves the cheaper work, the tokens past the
// last group going to the row kernels at about a third of the tiles'
// rate. Relative costs per token from BenchmarkGemm and
// BenchmarkGemmSmallBatch (one thread, GFLOP/cpu-s: 12-token tile
// ~141, 8-token ~118, rows ~40): 14, 17 and 50. So a 16-sequence decode
// step runs as two groups of eight instead of twelve and four rows (135M
// F16 --decode-seqs 16: 368–371 → 407–417 tokens/s, 1B F16 83 → 86–88),
// while a 512-token prefill keeps groups of twelve.
func floatGroup(batch int) int {
	cost := func(g int, perToken int) int {
		return (batch-batch%g)*perToken + batch%g*50
	}
	if batch >= 12 && cost(12, 14) <= cost(8, 17) {
		return 12
	}
	return 8
}

func gemmViews(a *activation, group int, base rowKernel) {
	a.gp.base = base
	if a.gp.head == nil {
		a.gp.head, a.gp.tail = new(activation), new(activation)
	}
	n := a.gp.groups * group
	a.view(a.gp.head, 0, n)
	a.view(a.gp.tail, n, a.batch)
}

// gemmPackQ8 lays out each group g of G tokens (G = 16, or 8 for a batch
// of 8 to 15: one group for gemmQ40x8), per block b, as G/2 64-byte token
// pairs: dword 2l+k of pair p is bytes 4l..4l+3 of token Gg+2p+k's block,
// each byte x stored as x^0x80 = x+128 (unsigned, for VPDPBUSD); and
// d16[(g·nb+b)·16+t] = token Gg+t's scale of block b (t < G; a group of
// eight leaves the other eight slots zero).
func gemmPackQ8(a *activation) {
	cols, nb := a.cols, a.cols/32
	G := 16
	if a.batch < 16 {
		G = 8
	}
	g := a.batch / G
	a.gp.groups, a.gp.group = g, G
	a.gp.xq = grow(a.gp.xq, g*G*cols)
	a.gp.d16 = grow(a.gp.d16, g*16*nb)
	xq, d16 := a.gp.xq, a.gp.d16
	if G < 16 {
		clear(d16[:g*16*nb])
	}
	for gi := 0; gi < g; gi++ {
		for p := 0; p < G/2; p++ {
			t0 := G*gi + 2*p
			gemmPackQ8Pair(&xq[gi*nb*32*G+64*p], &a.qs[t0*cols], &a.qs[(t0+1)*cols], nb, 32*G)
		}
		for b := 0; b < nb; b++ {
			for t := 0; t < G; t++ {
				d16[(gi*nb+b)*16+t] = a.d[(G*gi+t)*nb+b]
			}
		}
	}
}

// rowsGemmQ8 runs gemmQ40x16 (or, for one group of eight, gemmQ40x8) over
// row pairs × full groups, and the row kernel over the odd last row and
// the tokens past the last group.
func rowsGemmQ8(out []float32, m *Matrix, a *activation, r0, r1 int) {
	g, G, nb, rb := a.gp.groups, a.gp.group, a.cols/32, m.rowBytes()
	rEnd := r0 + (r1-r0)&^1
	if rEnd > r0 {
		for gi := 0; gi < g; gi++ {
			xp, d16 := &a.gp.xq[gi*nb*32*G], &a.gp.d16[gi*nb*16]
			o := out[gi*G*m.Rows:]
			for r := r0; r < rEnd; r += 2 {
				w := &m.Data[r*rb]
				if G == 8 {
					gemmQ40x8(w, rb, xp, d16, nb, &o[r], 4*m.Rows)
				} else {
					gemmQ40x16(w, rb, xp, d16, nb, &o[r], 4*m.Rows)
				}
			}
		}
	}
	gemmFinish(out, m, a, G, r0, rEnd, r1)
}

// gemmFinish runs the base row kernel over rows [rEnd, r1) of the grouped
// tokens and over every row of the tokens past them.
func gemmFinish(out []float32, m *Matrix, a *activation, group, r0, rEnd, r1 int) {
	n := a.gp.groups * group
	if rEnd < r1 {
		a.gp.base(out, m, a.gp.head, rEnd, r1)
	}
	if n < a.batch {
		a.gp.base(out[n*m.Rows:], m, a.gp.tail, r0, r1)
	}
}

// gemmPackF lays out each group g of a.gp.group (8 or 12) tokens, per
// eight columns c, as its 16-float token pairs: x[2p][8c..8c+8] then
// x[2p+1][8c..8c+8].
func gemmPackF(a *activation) {
	cols, n8, G := a.cols, a.cols&^7, a.gp.group
	g := a.batch / G
	a.gp.groups = g
	a.gp.xf = grow(a.gp.xf, g*G*n8)
	for gi := 0; gi < g; gi++ {
		for p := 0; p < G/2; p++ {
			t0 := G*gi + 2*p
			gemmPackFPair(&a.gp.xf[gi*G*n8+16*p], &a.x[t0*cols], &a.x[(t0+1)*cols], n8, 32*G)
		}
	}
}

func gemmFTile(t gguf.Type, w *byte, rb int, xp *float32, n8 int, out *float32, stride int) {
	switch t {
	case gguf.F16:
		gemmF16x8(w, rb, xp, n8, out, stride)
	case gguf.BF16:
		gemmBF16x8(w, rb, xp, n8, out, stride)
	default:
		gemmF32x8(w, rb, xp, n8, out, stride)
	}
}

// rowsGemmF runs the six-row float tile over full groups; columns past
// the last multiple of eight continue each result's FMA chain as
// dotFloatRef does.
func rowsGemmF(out []float32, m *Matrix, a *activation, r0, r1 int) {
	g, rb, cols := a.gp.groups, m.rowBytes(), a.cols
	n8, G, R := cols&^7, a.gp.group, a.gp.rows
	rEnd := r0 + (r1-r0)/R*R
	if rEnd > r0 {
		for gi := 0; gi < g; gi++ {
			xp := &a.gp.xf[gi*G*n8]
			o := out[gi*G*m.Rows:]
			for r := r0; r < rEnd; r += R {
				if G == 12 {
					gemmFTile12(m.Type, &m.Data[r*rb], rb, xp, n8, &o[r], 4*m.Rows)
				} else {
					gemmFTile(m.Type, &m.Data[r*rb], rb, xp, n8, &o[r], 4*m.Rows)
				}
			}
		}
		if n8 != cols {
			for b := 0; b < g*G; b++ {
				x := a.x[b*cols : (b+1)*cols]
				for r := r0; r < rEnd; r++ {
					w := m.row(r)
					s := out[b*m.Rows+r]
					for i := n8; i < cols; i++ {
						s = fma32(weightAt(m.Type, w, i), x[i], s)
					}
					out[b*m.Rows+r] = s
				}
			}
		}
	}
	gemmFinish(out, m, a, G, r0, rEnd, r1)
}

func gemmFTile12(t gguf.Type, w *byte, rb int, xp *float32, n8 int, out *float32, stride int) {
	switch t {
	case gguf.F16:
		gemmF16x12(w, rb, xp, n8, out, stride)
	case gguf.BF16:
		gemmBF16x12(w, rb, xp, n8, out, stride)
	default:
		gemmF32x12(w, rb, xp, n8, out, stride)
	}
}
