//go:build amd64 && !noasm

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// gemmTypes are the weight types with prefill tiles, and whether this CPU
// runs them.
func gemmTypes(t *testing.T) []gguf.Type {
	var ts []gguf.Type
	if gemmHasQ8 {
		ts = append(ts, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K)
	} else {
		t.Log("skipped: Q4_0, Q4_K, Q6_K avx512-vnni gemm (CPU lacks AVX512 F/BW/VL/VNNI)")
	}
	if gemmHasF {
		ts = append(ts, gguf.F16, gguf.BF16, gguf.F32)
	} else {
		t.Log("skipped: F16/BF16/F32 avx512 gemm (CPU lacks AVX512 F/VL)")
	}
	if impl.name == refKernels.name {
		t.Log("skipped: every gemm (reference kernels in use)")
		return nil
	}
	return ts
}

// gemmMatrix is a random matrix of t; Q8_0 takes raw random quant bytes
// (so −128, which Quantize never writes, occurs) under sane scales.
func gemmMatrix(t *testing.T, r *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	if typ != gguf.Q8_0 {
		return randMatrix(t, r, typ, rows, cols)
	}
	data := make([]byte, rows*cols/32*34)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for b := 0; b < len(data)/34; b++ {
		binary.LittleEndian.PutUint16(data[34*b:], F32ToF16(float32(r.NormFloat64())/64))
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGemmEqualsReferenceBitForBit runs every tile this CPU supports
// against MatMulRef, over ragged rows (tiles of 2 and 6 leave rows to the
// row kernels) and batches that leave tokens past the last full group,
// also on sub-ranges of rows as the pool's chunks call it.
func TestGemmEqualsReferenceBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 34))
	batches := []int{17, 24, 31, 32, 33, 47, 64}
	if short() {
		batches = []int{17, 33}
	}
	for _, typ := range gemmTypes(t) {
		colsList := []int{8, 13, 64, 581}
		switch typ {
		case gguf.Q8_0, gguf.Q4_0:
			colsList = []int{32, 96, 576}
		case gguf.Q4_K, gguf.Q6_K:
			colsList = []int{256, 768}
		}
		// The smallest batch the tiles take (a decode step's, 8 or 16
		// tokens) and, for the 8-token float tile, one leaving a tail.
		typBatches := append([]int{gemmMinBatch(typ), gemmMinBatch(typ) + 7}, batches...)
		for _, cols := range colsList {
			for _, rows := range []int{1, 2, 5, 6, 7, 13, 40} {
				m := gemmMatrix(t, r, typ, rows, cols)
				for _, batch := range typBatches {
					x := randVec(r, batch*cols, 1)
					// An outlier per block drives some activations to ±127.
					x[r.IntN(len(x))] = 40
					want := make([]float32, batch*rows)
					MatMulRef(want, m, x, batch)
					a := prepareActivation(typ, x, batch, cols, NewPool(1))
					kern := gemmRows(typ, a, impl.rows(typ, cols))
					if a.gp.groups == 0 {
						t.Fatalf("%s batch %d: gemm did not run", typ, batch)
					}
					for _, split := range [][2]int{{0, rows}, {0, rows / 2}, {rows / 2, rows}, {1, rows}} {
						r0, r1 := split[0], split[1]
						if r0 >= r1 {
							continue
						}
						got := make([]float32, batch*rows)
						kern(got, m, a, r0, r1)
						for b := 0; b < batch; b++ {
							for row := r0; row < r1; row++ {
								i := b*rows + row
								if !sameBits(got[i], want[i]) {
									t.Fatalf("%s %d×%d batch %d rows [%d,%d): token %d row %d gemm %g ref %g",
										typ, rows, cols, batch, r0, r1, b, row, got[i], want[i])
								}
							}
						}
					}
					putActivation(a)
				}
			}
		}
	}
}

// TestGemmQ6KLargeLanesBitForBit drives Q6_K's integer lanes past 2^24,
// where float32 stops being exact: values near 63, scales all 127 or −128,
// activations all ±127. Then only the folded order (the offset subtracted
// from each lane's integer before one conversion, as dotKRef does) gives
// the reference's bits; converting the offset separately, or keeping it
// in its own accumulator, rounds differently. Random matrices stay far
// below 2^24 and cannot tell these orders apart.
func TestGemmQ6KLargeLanesBitForBit(t *testing.T) {
	if !gemmHasQ8 || impl.name == refKernels.name {
		t.Skip("skipped: Q6_K avx512-vnni gemm (CPU lacks AVX512 F/BW/VL/VNNI, or reference kernels in use)")
	}
	r := rand.New(rand.NewPCG(21, 22))
	const rows, cols, batch = 9, 768, 35
	data := make([]byte, rows*cols/256*210)
	for b := 0; b < len(data)/210; b++ {
		blk := data[210*b : 210*b+210]
		for i := 0; i < q6kOffScales; i++ {
			blk[i] = 0xff
			if r.IntN(4) == 0 {
				blk[i] = byte(r.Uint32())
			}
		}
		sc := byte(127)
		if b%3 == 1 {
			sc = 0x80 // −128
		}
		for j := 0; j < 16; j++ {
			blk[q6kOffScales+j] = sc
			if b%3 == 2 && r.IntN(2) == 0 {
				blk[q6kOffScales+j] = 0x80
			}
		}
		binary.LittleEndian.PutUint16(blk[q6kOffD:], F32ToF16(float32(r.NormFloat64())/1024))
	}
	m, err := NewMatrix(gguf.Q6_K, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, batch*cols)
	for tok := 0; tok < batch; tok++ {
		for i := 0; i < cols; i++ {
			v := float32(1)
			switch tok % 3 {
			case 1:
				v = -1
			case 2:
				if r.IntN(8) == 0 {
					v = -1
				}
			}
			x[tok*cols+i] = v * float32(1+tok)
		}
	}
	want := make([]float32, batch*rows)
	MatMulRef(want, m, x, batch)
	a := prepareActivation(gguf.Q6_K, x, batch, cols, NewPool(1))
	defer putActivation(a)
	kern := gemmRows(gguf.Q6_K, a, impl.rows(gguf.Q6_K, cols))
	if a.gp.groups == 0 {
		t.Fatal("gemm did not run")
	}
	got := make([]float32, batch*rows)
	kern(got, m, a, 0, rows)
	for i := range want {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("token %d row %d: gemm %g ref %g", i/rows, i%rows, got[i], want[i])
		}
	}
}

// TestGemmIsBatchAndThreadInvariant checks I8 across the tile boundary: a
// token alone (row kernels) and at any position of prefill batches, with
// 1–3 threads, gives the same bits.
func TestGemmIsBatchAndThreadInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const maxBatch = 41
	for _, typ := range gemmTypes(t) {
		cols := 96
		if typ == gguf.Q4_K || typ == gguf.Q6_K {
			cols = 512
		}
		rows := 50
		m := gemmMatrix(t, r, typ, rows, cols)
		xs := randVec(r, maxBatch*cols, 1)
		alone := make([]float32, maxBatch*rows)
		p1 := NewPool(1)
		for b := 0; b < maxBatch; b++ {
			p1.MatMul(alone[b*rows:(b+1)*rows], m, xs[b*cols:(b+1)*cols], 1)
		}
		p1.Close()
		for threads := 1; threads <= 3; threads++ {
			p := NewPool(threads)
			for _, batch := range []int{17, 23, 32, 40} {
				for _, start := range []int{0, 1, maxBatch - batch} {
					out := make([]float32, batch*rows)
					p.MatMul(out, m, xs[start*cols:(start+batch)*cols], batch)
					for b := 0; b < batch; b++ {
						for row := 0; row < rows; row++ {
							if g, w := out[b*rows+row], alone[(start+b)*rows+row]; !sameBits(g, w) {
								t.Fatalf("%s threads %d batch %d start %d: token %d row %d: %g in batch, %g alone",
									typ, threads, batch, start, b, row, g, w)
							}
						}
					}
				}
			}
			p.Close()
		}
	}
}

// BenchmarkGemm is a prefill product of the 135M shape (576→1536, 512
// tokens; Q4_K, Q6_K: the 1B shape, 2048→2048, 128 tokens) on one thread, gemm
// tiles against the row kernels: GFLOP/s wall-clock and per CPU-second,
// and as fractions of the FMA probe measured right after (of-fma-peak
// wall-clock, of-fma-cpu per CPU-second; the host is shared, so the
// per-CPU figures are the stable ones). Integer kernels count 2 flops per
// multiply-add and can exceed 1.
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.F16, gguf.Q4_K, gguf.Q6_K, gguf.F32, gguf.Q4_0} {
		rows, cols, batch := 1536, 576, 512
		if typ == gguf.Q4_K || typ == gguf.Q6_K {
			rows, cols, batch = 2048, 2048, 128 // the 1B shape's attention, pp128
		}
		m := gemmMatrix(&testing.T{}, r, typ, rows, cols)
		x := randVec(r, batch*cols, 1)
		out := make([]float32, batch*rows)
		p := NewPool(1)
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("%s/gemm=%v", typ, on)
			b.Run(name, func(b *testing.B) {
				if perCPU := benchMatMulGemm(b, p, m, x, out, batch, on); perCPU > 0 {
					b.ReportMetric(perCPU/fmaPerCPUSecond(), "of-fma-cpu")
				}
				flop := 2 * float64(rows*cols*batch)
				rate := flop * float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(rate/1e9, "GFLOP/s")
				b.ReportMetric(rate/FMAPeak(p, 3), "of-fma-peak")
			})
		}
		p.Close()
	}
}

// TestQuantizeQ8KFastEqualsGo compares the AVX-512 and AVX2 Q8_K
// quantizers (those the CPU has) with the Go one on random blocks of many
// magnitudes and on the edge cases: NaN
// and infinities, all-zero and −0 blocks, denormals whose −127/m
// overflows, ties of the largest magnitude with either sign first, and
// values on rounding ties.
func TestQuantizeQ8KFastEqualsGo(t *testing.T) {
	ran := 0
	for _, v := range []struct {
		name       string
		has, force bool
	}{{"avx512", gemmHasF, false}, {"avx2", q8kHasAVX2, true}} {
		if !v.has {
			t.Logf("skipped: %s Q8_K quantizer (CPU lacks it)", v.name)
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			defer func(f bool) { q8kForceAVX2 = f }(q8kForceAVX2)
			q8kForceAVX2 = v.force
			testQuantizeQ8KFastEqualsGo(t)
		})
		ran++
	}
	if ran == 0 {
		t.Skip("skipped: no Q8_K quantizer variant (CPU lacks AVX2 and AVX-512)")
	}
}

func testQuantizeQ8KFastEqualsGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const nb = 64
	for iter := 0; iter < 200; iter++ {
		x := randVec(r, nb*256, float32(math.Ldexp(1, r.IntN(40)-20)))
		for b := 0; b < nb; b++ {
			blk := x[256*b : 256*b+256]
			switch b % 9 {
			case 1:
				blk[r.IntN(256)] = float32(math.NaN())
			case 2:
				blk[r.IntN(256)] = float32(math.Inf(1 - 2*r.IntN(2)))
			case 3:
				clear(blk)
				if r.IntN(2) == 0 {
					blk[r.IntN(256)] = float32(math.Copysign(0, -1))
				}
			case 4:
				for i := range blk {
					blk[i] = math.Float32frombits(uint32(r.IntN(1 << 20)))
				}
			case 5:
				i, j := r.IntN(256), r.IntN(256)
				blk[i], blk[j] = 3, -3
			case 6:
				// m = -127 makes iscale 1: x.5 values land on ties.
				for i := range blk {
					blk[i] = float32(r.IntN(255)-127) + 0.5
				}
				blk[r.IntN(256)] = -127
			}
		}
		want, got := make([]int8, len(x)), make([]int8, len(x))
		wd, gd := make([]float32, nb), make([]float32, nb)
		quantizeQ8KBlocks(x, want, wd)
		quantizeQ8KFast(x, got, gd)
		for b := 0; b < nb; b++ {
			if !sameBits(wd[b], gd[b]) {
				t.Fatalf("iter %d block %d: d %g, Go %g", iter, b, gd[b], wd[b])
			}
		}
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("iter %d block %d: q[%d] %d, Go %d (x %g)", iter, i/256, i%256, got[i], want[i], x[i])
			}
		}
	}
}

// fmaPerCPUSecond is the FMA probe's rate per CPU-second of this thread's
// process: the same-run yardstick for GFLOP/cpu-s, which a shared host
// moves much less than wall-clock rates.
func fmaPerCPUSecond() float64 {
	start := cpuTime()
	var fl float64
	for range 8 {
		_, f := probeFMA(1 << 21)
		fl += f
	}
	return fl / (cpuTime() - start).Seconds()
}

// TestGemmAllocatesNothing: a prefill MatMul through the tiles (with
// tokens and rows left to the row kernels) reuses its recycled layouts.
func TestGemmAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race (sync.Pool drops items at random)")
	}
	p := NewPool(2)
	defer p.Close()
	r := rand.New(rand.NewPCG(15, 16))
	for _, typ := range gemmTypes(t) {
		m := gemmMatrix(t, r, typ, 257, 512)
		batch := 37
		x := randVec(r, batch*512, 1)
		out := make([]float32, batch*257)
		p.MatMul(out, m, x, batch) // warm the recycled buffers
		if n := testing.AllocsPerRun(20, func() { p.MatMul(out, m, x, batch) }); n > 0.1 {
			t.Errorf("%s batch %d: %.2f allocations per MatMul, want 0", typ, batch, n)
		}
	}
}

// BenchmarkGemmSmallBatch is a batched decode step's size, one thread on
// a 1536×2048 matrix: 8 and 16 tokens (a full group of the float and of
// the integer tiles, so the tiles run) and 17 (a group and one token the
// row kernels finish), in GFLOP per CPU-second, with the tiles on and off.
func BenchmarkGemmSmallBatch(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	p := NewPool(1)
	defer p.Close()
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_K, gguf.F16} {
		m := gemmMatrix(&testing.T{}, r, typ, 1536, 2048)
		for _, batch := range []int{8, 16, 17} {
			x := randVec(r, batch*2048, 1)
			out := make([]float32, batch*1536)
			for _, on := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/b%d/gemm=%v", typ, batch, on), func(b *testing.B) {
					benchMatMulGemm(b, p, m, x, out, batch, on)
				})
			}
		}
	}
}

// BenchmarkMatMulItems compares the gemm MatMul's two items per thread
// with the row kernels' 32 KiB items (items=0) on two threads: the 135M
// shape's projections at 512 tokens and the 1B shape's down projection at
// 128.
func BenchmarkMatMulItems(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	p := NewPool(2)
	defer p.Close()
	defer func(v int) { gemmItemsPerThread = v }(gemmItemsPerThread)
	for _, c := range []struct {
		t                 gguf.Type
		rows, cols, batch int
	}{
		{gguf.F16, 576, 1536, 512}, {gguf.F16, 576, 576, 512}, {gguf.F16, 1536, 576, 512},
		{gguf.F16, 192, 576, 512}, {gguf.F16, 2048, 8192, 128}, {gguf.Q4_0, 576, 1536, 512},
		{gguf.Q4_K, 2048, 2048, 128},
	} {
		m := gemmMatrix(&testing.T{}, r, c.t, c.rows, c.cols)
		x := randVec(r, c.batch*c.cols, 1)
		out := make([]float32, c.batch*c.rows)
		for _, items := range []int{0, 2} {
			b.Run(fmt.Sprintf("%s/%dx%d/b%d/items=%d", c.t, c.rows, c.cols, c.batch, items), func(b *testing.B) {
				gemmItemsPerThread = items
				benchMatMulGemm(b, p, m, x, out, c.batch, true)
				flop := 2 * float64(c.rows*c.cols*c.batch)
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// benchMatMulGemm times MatMul over batch tokens with the gemm tiles on or
// off and reports (and returns) GFLOP per CPU-second.
func benchMatMulGemm(b *testing.B, p *Pool, m *Matrix, x, out []float32, batch int, on bool) float64 {
	defer func(v bool) { gemmEnabled = v }(gemmEnabled)
	gemmEnabled = on
	start := cpuTime()
	for b.Loop() {
		p.MatMul(out, m, x, batch)
	}
	d := cpuTime() - start
	if d <= 0 {
		return 0
	}
	perCPU := 2 * float64(m.Rows*m.Cols*batch) * float64(b.N) / d.Seconds()
	b.ReportMetric(perCPU/1e9, "GFLOP/cpu-s")
	return perCPU
}

// TestUnpackQ4KScalesAsmEqualsGo checks kUnpackQ4KScalesZ against the Go
// decoding of the same rows of random bytes (every 6-bit scale and min
// pattern): the scale words and min words gemmK16 reads must be equal.
func TestUnpackQ4KScalesAsmEqualsGo(t *testing.T) {
	if !gemmHasQ8 {
		t.Skip("skipped: kUnpackQ4KScalesZ needs AVX-512 BW/VL (the tiles it serves need VNNI too)")
	}
	defer func(v bool) { q4kScalesAsm = v }(q4kScalesAsm)
	r := rand.New(rand.NewPCG(65, 66))
	for _, nsb := range []int{1, 2, 7, 32} {
		row := make([]byte, 144*nsb)
		for i := range row {
			row[i] = byte(r.Uint32())
		}
		var got, want kRowScratch
		for _, s := range []*kRowScratch{&got, &want} {
			s.q, s.sv, s.wm = make([]byte, 256*nsb), make([]uint64, 32*nsb), make([]byte, 40*nsb)
		}
		q4kScalesAsm = true
		got.unpackQ4K(row, nsb)
		q4kScalesAsm = false
		want.unpackQ4K(row, nsb)
		for i := range want.sv {
			if got.sv[i] != want.sv[i] {
				t.Fatalf("nsb %d: scale words %d = %#x, Go %#x", nsb, i, got.sv[i], want.sv[i])
			}
		}
		for i := range want.wm {
			if got.wm[i] != want.wm[i] {
				t.Fatalf("nsb %d: min/factor byte %d = %#x, Go %#x", nsb, i, got.wm[i], want.wm[i])
			}
		}
	}
}

// TestFloatGroupLeavesTheCheaperTail checks the float tiles' token group
// against costs worked by hand (per token: 14 in twelves, 17 in eights,
// 50 on the row kernels).
func TestFloatGroupLeavesTheCheaperTail(t *testing.T) {
	for _, c := range []struct{ batch, want int }{
		{8, 8}, {11, 8}, // below twelve: eights
		{12, 12},  // 168 against 8·17 + 4·50 = 336
		{16, 8},   // 168 + 4·50 = 368 against 16·17 = 272
		{17, 8},   // 418 against 322
		{24, 12},  // 336 against 408
		{32, 8},   // 24·14 + 8·50 = 736 against 544
		{64, 12},  // 1040 against 1088
		{128, 12}, // 2080 against 2176
		{512, 12}, // 7456 against 8704
	} {
		if got := floatGroup(c.batch); got != c.want {
			t.Errorf("floatGroup(%d) = %d, want %d", c.batch, got, c.want)
		}
	}
}
