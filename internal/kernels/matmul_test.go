package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// colsFor returns column counts worth testing for t: several blocks, and for
// float types counts that leave a tail past a multiple of eight.
func colsFor(t gguf.Type) []int {
	switch t.BlockElems() {
	case 256:
		return []int{256, 768}
	case 32:
		return []int{32, 96, 576}
	}
	return []int{1, 7, 8, 64, 77, 576}
}

func TestMatMulFastEqualsReferenceBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range allTypes {
		for _, cols := range colsFor(typ) {
			for _, rows := range []int{1, 3, 17, 40} {
				for _, batch := range []int{1, 3, 4, 9, 13, 17} {
					m := randMatrix(t, r, typ, rows, cols)
					x := randVec(r, batch*cols, 1)
					got := make([]float32, batch*rows)
					want := make([]float32, batch*rows)
					p.MatMul(got, m, x, batch)
					MatMulRef(want, m, x, batch)
					for i := range got {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("%s %d×%d batch %d: out[%d] fast %g ref %g", typ, rows, cols, batch, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	t.Logf("implementation %s", Implementation())
}

// TestMatMulIsBatchInvariant checks I8: a token's outputs are bit-identical
// alone, at any position of any batch (including tails that do not fill a
// tile), with any thread count.
func TestMatMulIsBatchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	maxBatch := 11
	if short() {
		maxBatch = 6
	}
	for _, typ := range allTypes {
		cols := colsFor(typ)[1]
		rows := 1 + r.IntN(40)
		m := randMatrix(t, r, typ, rows, cols)
		xs := randVec(r, maxBatch*cols, 1)
		alone := make([][]float32, maxBatch)
		p1 := NewPool(1)
		for b := range alone {
			alone[b] = make([]float32, rows)
			p1.MatMul(alone[b], m, xs[b*cols:(b+1)*cols], 1)
		}
		p1.Close()
		for threads := 1; threads <= 4; threads++ {
			p := NewPool(threads)
			for batch := 1; batch <= maxBatch; batch++ {
				// The batch holds tokens [start, start+batch) of xs, so each
				// token appears at different positions across batches.
				start := (maxBatch - batch) / 2
				out := make([]float32, batch*rows)
				p.MatMul(out, m, xs[start*cols:(start+batch)*cols], batch)
				for b := 0; b < batch; b++ {
					for row := 0; row < rows; row++ {
						if !sameBits(out[b*rows+row], alone[start+b][row]) {
							t.Fatalf("%s threads %d batch %d pos %d row %d: %g, alone %g",
								typ, threads, batch, b, row, out[b*rows+row], alone[start+b][row])
						}
					}
				}
			}
			p.Close()
		}
	}
}

// TestMatMulRefApproximatesExactProduct checks the reference against a
// float64 product of the dequantized weights: float weights to float32
// rounding, quantized weights within the int8 activation quantization
// error (half a step of each block's scale, summed over the row).
func TestMatMulRefApproximatesExactProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range allTypes {
		cols := colsFor(typ)[len(colsFor(typ))-1]
		rows, batch := 5, 3
		m := randMatrix(t, r, typ, rows, cols)
		x := randVec(r, batch*cols, 1)
		out := make([]float32, rows*batch)
		MatMulRef(out, m, x, batch)
		w := make([]float32, cols)
		for row := 0; row < rows; row++ {
			m.DequantizeRow(w, row)
			for b := 0; b < batch; b++ {
				var exact, absSum, actErr float64
				xb := x[b*cols : (b+1)*cols]
				blk := actBlock(typ)
				for c := range w {
					exact += float64(w[c]) * float64(xb[c])
					absSum += math.Abs(float64(w[c]) * float64(xb[c]))
				}
				if blk > 0 {
					// Each activation is off by at most half a step plus,
					// for the F16 scales of Q8_0/Q8_1, 127 × the scale's
					// rounding (2^-11 relative): 0.5 + 127/2048 < 0.563
					// steps. Q8_1's s = F16(d×Σq) puts a relative 2^-11 on
					// the min term: |m|×32×amax×2^-11 per block bounds it.
					for c0 := 0; c0 < cols; c0 += blk {
						amax := float64(absMax(xb[c0 : c0+blk]))
						for c := c0; c < c0+blk; c++ {
							actErr += math.Abs(float64(w[c])) * amax / 127 * 0.563
						}
						if usesQ8_1(typ) {
							mn := float64(f16At(m.row(row), (c0/32)*typ.BlockBytes()+2))
							actErr += math.Abs(mn) * (32*amax*0.563/127 + 32*amax/2048)
						}
					}
				}
				tol := 1e-5*absSum + actErr + 1e-6
				if d := math.Abs(float64(out[b*rows+row]) - exact); d > tol {
					t.Errorf("%s row %d token %d: got %g, exact %g (diff %g > tol %g)", typ, row, b, out[b*rows+row], exact, d, tol)
				}
			}
		}
	}
}

func TestNewMatrixRejectsInconsistentShapes(t *testing.T) {
	tests := []struct {
		name       string
		typ        gguf.Type
		rows, cols int
		bytes      int
	}{
		{"short data", gguf.Q8_0, 2, 32, 67},
		{"long data", gguf.F32, 2, 3, 25},
		{"cols not whole blocks", gguf.Q4_K, 1, 128, 72},
		{"unknown type", gguf.Type(99), 1, 1, 4},
		{"negative rows", gguf.F32, -1, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMatrix(tc.typ, tc.rows, tc.cols, make([]byte, tc.bytes)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := NewMatrix(gguf.Q6_K, 2, 512, make([]byte, 2*2*210)); err != nil {
		t.Fatalf("valid Q6_K matrix rejected: %v", err)
	}
}

func ExampleQuantize() {
	w := make([]float32, 64) // 2×32
	for i := range w {
		w[i] = float32(i%32) / 31
	}
	data, _ := Quantize(gguf.Q8_0, w)
	m, _ := NewMatrix(gguf.Q8_0, 2, 32, data)
	x := make([]float32, 32)
	x[31] = 2
	out := make([]float32, 2)
	MatMulRef(out, m, x, 1)
	fmt.Printf("%.2f %.2f\n", out[0], out[1])
	// Output: 2.00 2.00
}

// TestActivationQuantizationFastEqualsReference covers the int8 activation
// encoder on ordinary, zero, tiny, huge and non-finite blocks.
func TestActivationQuantizationFastEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 18))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-38, 1e-44, 3e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0.5, -127.5}
	for trial := 0; trial < 200; trial++ {
		nb := 1 + r.IntN(20)
		x := randVec(r, 32*nb, float32(math.Ldexp(1, r.IntN(60)-30)))
		for i := range x {
			if r.IntN(50) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
		}
		if trial%7 == 0 {
			clear(x[:32]) // an all-zero block
		}
		q1, q2 := make([]int8, len(x)), make([]int8, len(x))
		d1, d2 := make([]float32, nb), make([]float32, nb)
		quantizeBlocks(x, q1, d1)
		quantizeBlocksRef(x, q2, d2)
		for b := range d1 {
			if !sameBits(d1[b], d2[b]) {
				t.Fatalf("trial %d block %d: d fast %g ref %g", trial, b, d1[b], d2[b])
			}
		}
		for i := range q1 {
			if q1[i] != q2[i] {
				t.Fatalf("trial %d x[%d]=%g: q fast %d ref %d", trial, i, x[i], q1[i], q2[i])
			}
		}
	}
}

// TestMatMulTallMatricesEqualReference covers matrices taller than one
// 32 KiB row step of the token-by-token kernels (rowsQ32, rowsKx) and than
// one work item, on one and two threads.
func TestMatMulTallMatricesEqualReference(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, typ := range allTypes {
		cols := colsFor(typ)[0]
		rb, _ := typ.RowBytes(cols)
		rows := 2*(32<<10)/rb + 7
		m := randMatrix(t, r, typ, rows, cols)
		for _, threads := range []int{1, 2} {
			p := NewPool(threads)
			for _, batch := range []int{1, 5} {
				x := randVec(r, batch*cols, 1)
				got, want := make([]float32, batch*rows), make([]float32, batch*rows)
				p.MatMul(got, m, x, batch)
				MatMulRef(want, m, x, batch)
				for i := range got {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("%s %d×%d threads %d batch %d: out[%d] fast %g ref %g", typ, rows, cols, threads, batch, i, got[i], want[i])
					}
				}
			}
			p.Close()
		}
	}
}
