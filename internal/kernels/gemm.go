package kernels

// Prefill GEMM tiles (gemm_amd64.go, gemm_*_amd64.s).
//
// From one full token group up (gemmMinBatch) a MatMul is a GEMM, and the row kernels' small
// tiles are bound by loads and by the instructions that widen weights, not
// by the FMA or integer-dot units. The gemm tiles take whole groups of
// tokens (16 for Q4_0, 8 for float weights) against two (Q4_0) or six
// (float) rows, with the activations re-laid out once per MatMul so the
// tile streams them with full-width loads. Weights are read in place from
// the model's mmap: no repacked copy, so resident memory is unchanged (the
// decode kernels read the same pages). The per-MatMul activation copy is
// batch×cols bytes (Q4_0) or floats (float weights), reused across calls.
// Q8_0 has no gemm tile: its row kernels read a copy packed at load
// (q8pack.go) and are their own GEMM.
//
// Every (row, token) goes through dotQ32Ref's / dotFloatRef's operations in
// their order — the integer block sums are exact whatever instruction forms
// them, and the float steps (scale product, convert, FMA per lane, hsum8)
// are the same — so tokens outside a full group, rows outside a full
// tile, and other CPUs all give the same bits (I8).

// gemmPack is a MatMul's activations laid out for the gemm tiles, and the
// views of the activation the row kernels finish with.
type gemmPack struct {
	groups int       // full token groups laid out; 0 = the gemm does not run
	group  int       // tokens per group: Q4_0 16 (8 below 16 tokens), floats 12 (8 below 12)
	xq     []byte    // Q4_0: see gemmPackQ8
	d16    []float32 // Q4_0, K-quants: the sixteen tokens' scales per block
	bsT    []int32   // K-quants: see gemmPackK
	xf     []float32 // float weights: see gemmPackF
	rows   int       // rows per tile
	base   rowKernel // the row kernel for what the tiles leave
	head   *activation
	tail   *activation
}

// view sets v to tokens [lo, hi) of a (lo a multiple of 8).
func (a *activation) view(v *activation, lo, hi int) {
	cols := a.cols
	*v = activation{batch: hi - lo, cols: cols, block: a.block}
	v.x = a.x[lo*cols : hi*cols]
	if a.block == 0 {
		return
	}
	nb := cols / a.block
	v.qs = a.qs[lo*cols : hi*cols]
	v.d = a.d[lo*nb : hi*nb]
	if len(a.s) > 0 {
		v.s = a.s[lo*nb : hi*nb]
	}
	if a.block == 256 {
		v.bsum = a.bsum[lo*cols/16 : hi*cols/16]
	}
	if a.block == 32 && hi-lo >= 8 {
		v.dT = a.dT[lo/8*nb*8 : hi/8*nb*8]
	}
}

// gemmChunk rounds MatMul's rows per work item up to whole tiles when the
// gemm runs, so no chunk leaves rows to the slower row kernel but the
// matrix's last.
func gemmChunk(a *activation, chunk int) int {
	if a.gp.groups == 0 || a.gp.rows <= 1 {
		return chunk
	}
	return (chunk + a.gp.rows - 1) / a.gp.rows * a.gp.rows
}
