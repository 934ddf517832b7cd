package kernels

import "testing"

// TestGemmChunkSizesPrefillItems checks the work items of a gemm MatMul:
// with three or more token groups, two per thread, or more (a multiple of
// the threads) when that keeps each within gemmItemMaxBytes of weights,
// rounded up to whole tiles; one or two groups (a decode step) and the
// row kernels keep the chunk they were given.
func TestGemmChunkSizesPrefillItems(t *testing.T) {
	for _, c := range []struct {
		groups, tileRows, rows, rowBytes, threads, chunk, want int
	}{
		{43, 4, 576, 1152, 2, 28, 144},  // 576/4 = 144 rows (162 KiB), 36 tiles
		{43, 4, 192, 1152, 2, 24, 48},   // 192/4
		{43, 6, 576, 1152, 2, 10, 144},  // 144 is 24 six-row tiles
		{43, 4, 13, 1152, 2, 1, 4},      // ceil(13/4) = 4, one tile
		{10, 4, 2048, 16384, 2, 2, 32},  // 32 MiB: 64 items of 32 rows (512 KiB)
		{10, 4, 2048, 3000, 2, 2, 172},  // 5.9 MiB: 12 items, 171 rows, up to 43 tiles
		{10, 4, 2048, 100, 2, 600, 600}, // an already larger chunk stays
		{8, 1, 2048, 1152, 2, 28, 342},  // 2.25 MiB: 6 items (not 5 of 455 rows); one-row tiles
		{8, 1, 2048, 1024, 2, 28, 512},  // exactly 2 MiB: the four items fit the cap
		{3, 2, 1536, 64, 1, 96, 768},    // one thread: two items
		{2, 6, 576, 1152, 2, 12, 12},    // two groups (a 16-sequence decode step): the chunk
		{1, 4, 2048, 16384, 2, 2, 4},    // one group: the chunk, whole tiles
		{1, 1, 2048, 1152, 2, 28, 28},   // one K-quant group: the chunk
		{0, 4, 576, 1152, 2, 27, 27},    // no gemm: the row kernels' chunk
	} {
		a := &activation{}
		a.gp.groups, a.gp.rows = c.groups, c.tileRows
		if got := gemmChunk(a, c.rows, c.rowBytes, c.threads, c.chunk); got != c.want {
			t.Errorf("%d groups, tile rows %d, %d rows of %d bytes on %d threads from %d: chunk %d, want %d",
				c.groups, c.tileRows, c.rows, c.rowBytes, c.threads, c.chunk, got, c.want)
		}
	}
}
