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

// gemmChunk sizes MatMul's work items when the gemm tiles pass
// gemmPrefillGroups or more token groups over the rows (a prefill): two items per thread (one
// to steal at the end), or as many more, a multiple of the threads, as
// keep each within gemmItemMaxBytes of weights, in whole tiles so no item
// leaves rows to the slower row kernel but the matrix's last. An item
// passes every token group over its rows, so the larger it is the longer
// a group's activations stay in L1 while the item's weights come from L2,
// where the row kernels' 32 KiB items kept the weights in L1 and re-read
// the activations. Two threads (BenchmarkMatMulItems, GFLOP/s, 32 KiB
// items → these): F16 512 tokens on 576×1536 168–184 → 251, 192×576
// 190–192 → 199–202, 1536×576 255–275 → 296, 576×576 242 → 256–261; 128
// tokens on 2048×8192 110–117 → 228–232; Q4_0 576×1536 254–276 → 287–295,
// Q4_K 2048×2048 384–395 → 405–406. A decode step's groups keep the
// small items: with large ones its weights, read from memory once, and
// the tokens past the group (the row kernel's second pass over the item)
// ran slower (1B F16, 16 sequences: 79–82 → 61–65 tokens/s, 71–73 with
// items capped at 512 KiB).
func gemmChunk(a *activation, rows, rowBytes, threads, chunk int) int {
	if a.gp.groups < gemmPrefillGroups || gemmItemsPerThread == 0 {
		return gemmWholeTiles(a, chunk)
	}
	items := gemmItemsPerThread * threads
	if size := rows * rowBytes; size > items*gemmItemMaxBytes {
		// More items under the cap, still a multiple of the threads: an
		// odd count left one thread a whole item behind (Q4_K 2048×2048,
		// five items of 455 rows: 364 → 345 GFLOP/s).
		perThread := threads * gemmItemMaxBytes
		items = (size + perThread - 1) / perThread * threads
	}
	return gemmWholeTiles(a, max(chunk, (rows+items-1)/items))
}

// gemmWholeTiles rounds chunk up to whole row tiles when the gemm runs.
func gemmWholeTiles(a *activation, chunk int) int {
	if a.gp.groups == 0 || a.gp.rows <= 1 {
		return chunk
	}
	return (chunk + a.gp.rows - 1) / a.gp.rows * a.gp.rows
}

// gemmPrefillGroups is the fewest token groups for which the large items
// are used. A decode step of up to 16 sequences is one or two groups
// (floatGroup makes 16 two groups of eight), and its weights come from
// memory: 1B F16, 16 sequences as two groups of eight, 88 tokens/s on
// the row kernels' items, 78.5–79 on large ones.
const gemmPrefillGroups = 3

// gemmItemsPerThread is how many work items a prefill gemm MatMul gives
// each thread. One per thread was faster on some shapes (F16 576×576 ×512
// tokens, two threads: 262 against 239–254 GFLOP/s; 576×1536 254 against
// 242–250) but leaves nothing to steal when a thread is held up (a server's
// other goroutines share these two cores). BenchmarkMatMulItems sets 0 (the
// row kernels' items) to measure what the larger items gain.
var gemmItemsPerThread = 2

// gemmItemMaxBytes caps an item's weights so they stay in L2 (1 MiB on
// Zen 4, 2 MiB and up on recent Intel) beside the activations while every
// token group passes over them: 1B F16 pp128 99.5–102.5 tok/s uncapped
// (512-row items, 8 MiB), 101.4–107.2 at 512 KiB, 105.7–107.6 at 1 MiB on
// this 4 MiB-L2 host.
const gemmItemMaxBytes = 512 << 10
