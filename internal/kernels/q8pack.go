package kernels

// The Q8_0 row kernels read each matrix repacked at load, eight rows at a
// time, so that one 256-bit vector holds the same four bytes of one block
// of eight rows: lane j of every vector belongs to row 8g+j. A tile then
// multiplies eight rows by one token's broadcast activation dword, and its
// integer sums land in eight lanes that are eight rows' block sums, with
// no horizontal reduction; the float step (dotQ8Ref: one fused
// multiply-add per block) is one vector instruction for eight rows, and
// the results are stored as eight consecutive outputs.
//
// Layout, group g of rows 8g..8g+7 (rows past the matrix's last are zero),
// block b, at (g×nb + b)×q8pBlock bytes:
//
//	bytes 0..15:    the eight rows' F16 scales d, row 8g+j at 2j;
//	bytes 16..271:  for k in 0..7, for j in 0..7: row 8g+j's quants
//	                4k..4k+3 at 16 + 32k + 4j.
//
// The repacked copy is as large as the Q8_0 data and replaces it for every
// product; Data stays the mapped file, read only to dequantize rows (token
// embeddings) and by the llama.cpp-order emulation (MatMulGGMLQ8).

// q8pBlock is the packed size of one block of eight rows.
const q8pBlock = 16 + 8*32

// packQ8 repacks rows×cols of Q8_0 data (validated by NewMatrix), large
// matrices over all CPUs (packParallel).
func packQ8(data []byte, rows, cols int) []byte {
	nb := cols / 32
	groups := (rows + 7) / 8
	out := make([]byte, groups*nb*q8pBlock)
	packParallel(len(out), groups, func(g0, g1 int) { packQ8Groups(out, data, rows, nb, g0, g1) })
	return out
}

// packQ8Groups packs groups [g0, g1) into out.
func packQ8Groups(out, data []byte, rows, nb, g0, g1 int) {
	rb := nb * 34
	for g := g0; g < g1; g++ {
		for j := 0; j < 8 && 8*g+j < rows; j++ {
			row := data[(8*g+j)*rb:]
			for b := 0; b < nb; b++ {
				blk := row[34*b : 34*b+34]
				dst := out[(g*nb+b)*q8pBlock:]
				dst[2*j], dst[2*j+1] = blk[0], blk[1]
				for k := 0; k < 8; k++ {
					copy(dst[16+32*k+4*j:16+32*k+4*j+4], blk[2+4*k:])
				}
			}
		}
	}
}
