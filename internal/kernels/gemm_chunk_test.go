package kernels

import "testing"

// TestGemmChunkGivesTwoWholeTileItemsPerThread checks the work items of a
// gemm MatMul: two per thread, rounded up to whole tiles; row kernels keep
// the chunk they were given.
func TestGemmChunkGivesTwoWholeTileItemsPerThread(t *testing.T) {
	for _, c := range []struct {
		groups, tileRows, rows, threads, chunk, want int
	}{
		{1, 4, 576, 2, 28, 144},   // 576/4 = 144 rows, 36 tiles
		{1, 4, 192, 2, 24, 48},    // 192/4
		{1, 6, 576, 2, 10, 144},   // 144 is 24 six-row tiles
		{1, 4, 13, 2, 1, 4},       // ceil(13/4) = 4, one tile
		{1, 4, 2048, 2, 600, 600}, // an already larger chunk stays
		{1, 1, 2048, 2, 8, 512},   // K-quant tiles take one row at a time
		{1, 2, 1536, 1, 96, 768},  // one thread: two items
		{0, 4, 576, 2, 28, 28},    // no gemm: the row kernels' chunk
	} {
		a := &activation{}
		a.gp.groups, a.gp.rows = c.groups, c.tileRows
		if got := gemmChunk(a, c.rows, c.threads, c.chunk); got != c.want {
			t.Errorf("groups %d tile rows %d, %d rows on %d threads from %d: chunk %d, want %d",
				c.groups, c.tileRows, c.rows, c.threads, c.chunk, got, c.want)
		}
	}
}
