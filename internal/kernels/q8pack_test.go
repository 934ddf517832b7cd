package kernels

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestQ8RowsAnyRange runs each kernel set's Q8_0 row kernel on row ranges
// that start and end inside a packed group of eight, span one, or cover
// odd and even counts of whole groups (q8pDot1 pairs the halves), and
// requires the reference's bits in range and untouched outputs outside.
// The quants are raw random bytes, so −128 (which Quantize never writes,
// and whose absolute value only fits unsigned) occurs.
func TestQ8RowsAnyRange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 8))
	const rows, cols = 61, 96
	data := make([]byte, rows*cols/32*34)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for b := 0; b < len(data)/34; b++ {
		binary.LittleEndian.PutUint16(data[34*b:], F32ToF16(float32(r.NormFloat64())/64))
	}
	m, err := NewMatrix(gguf.Q8_0, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	ranges := [][2]int{{0, 61}, {0, 8}, {0, 16}, {0, 24}, {0, 56}, {3, 5}, {5, 13}, {7, 41}, {8, 61}, {16, 60}, {57, 61}, {60, 61}}
	for _, batch := range []int{1, 2, 4, 5, 9} {
		x := randVec(r, batch*cols, 1)
		want := make([]float32, batch*rows)
		MatMulRef(want, m, x, batch)
		forEachKernelSet(t, func(name string) {
			kern := impl.rows(m.Type, m.Cols)
			for _, rg := range ranges {
				a := prepareActivation(m.Type, x, batch, cols, nil)
				got := make([]float32, batch*rows)
				for i := range got {
					got[i] = -7
				}
				kern(got, m, a, rg[0], rg[1])
				putActivation(a)
				for b := 0; b < batch; b++ {
					for row := 0; row < rows; row++ {
						i := b*rows + row
						in := row >= rg[0] && row < rg[1]
						if in && !sameBits(got[i], want[i]) || !in && got[i] != -7 {
							t.Fatalf("%s batch %d rows [%d,%d): out[%d] (row %d) %g, want %g (in range %v)", name, batch, rg[0], rg[1], i, row, got[i], want[i], in)
						}
					}
				}
			}
		})
	}
}

// TestPackQ8Layout checks packQ8 against q8pack.go's layout, element by
// element, with a row count that leaves a zero-padded last group.
func TestPackQ8Layout(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const rows, cols = 11, 64
	m := randMatrix(t, r, gguf.Q8_0, rows, cols)
	p := packQ8(m.Data, rows, cols)
	nb := cols / 32
	if len(p) != 2*nb*q8pBlock {
		t.Fatalf("packed %d bytes, want %d", len(p), 2*nb*q8pBlock)
	}
	for row := 0; row < 16; row++ {
		g, j := row/8, row%8
		for b := 0; b < nb; b++ {
			blk := p[(g*nb+b)*q8pBlock:]
			var src []byte
			if row < rows {
				src = m.Data[row*nb*34+b*34:]
			} else {
				src = make([]byte, 34)
			}
			if blk[2*j] != src[0] || blk[2*j+1] != src[1] {
				t.Fatalf("row %d block %d: scale bytes %x %x, want %x %x", row, b, blk[2*j], blk[2*j+1], src[0], src[1])
			}
			for e := 0; e < 32; e++ {
				if got := blk[16+32*(e/4)+4*j+e%4]; got != src[2+e] {
					t.Fatalf("row %d block %d quant %d: %d, want %d", row, b, e, got, src[2+e])
				}
			}
		}
	}
}

// TestKRowsLongRanges runs each kernel set's Q4_K/Q6_K row kernel over
// ranges longer than one MatMul chunk (a one-thread MatMul passes every
// row at once): rowsKPairs unpacks sixteen pairs at a time, so 70 rows
// meet three blocks, the last one short, and an odd row; batch 21 leaves
// a token past the four-token tiles.
func TestKRowsLongRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	const rows, cols, batch = 70, 512, 21
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K} {
		m := randMatrix(t, r, typ, rows, cols)
		x := randVec(r, batch*cols, 1)
		want := make([]float32, batch*rows)
		MatMulRef(want, m, x, batch)
		forEachKernelSet(t, func(name string) {
			kern := impl.rows(m.Type, m.Cols)
			for _, rg := range [][2]int{{0, rows}, {3, rows}, {1, 34}} {
				a := prepareActivation(m.Type, x, batch, cols, nil)
				got := make([]float32, batch*rows)
				kern(got, m, a, rg[0], rg[1])
				putActivation(a)
				for b := 0; b < batch; b++ {
					for row := rg[0]; row < rg[1]; row++ {
						if i := b*rows + row; !sameBits(got[i], want[i]) {
							t.Fatalf("%s %s rows [%d,%d): token %d row %d: %g, want %g", typ, name, rg[0], rg[1], b, row, got[i], want[i])
						}
					}
				}
			}
		})
	}
}

// TestPackQ8Parallel checks that a matrix large enough to be packed by
// several goroutines gives the bytes of one goroutine's pass, and that its
// last run (the groups do not divide evenly) is packed too.
func TestPackQ8Parallel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("skipped: GOMAXPROCS is 1, packQ8 packs on one goroutine")
	}
	r := rand.New(rand.NewPCG(2, 2))
	const rows, cols = 2051, 4096 // 257 groups, 9.4 MB packed
	data := make([]byte, rows*cols/32*34)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	got := packQ8(data, rows, cols)
	want := make([]byte, len(got))
	packQ8Groups(want, data, rows, cols/32, 0, (rows+7)/8)
	if !bytes.Equal(got, want) {
		t.Fatal("parallel packQ8 differs from one pass")
	}
}

// TestQ8BlockSums: q8BlockSums against the sums written out, on blocks of
// every extreme (all −128, all 127, mixed, zero) and random ones.
func TestQ8BlockSums(t *testing.T) {
	if !packsQ8 {
		t.Skip("this build has no assembly (noasm or not amd64): q8BlockSums is not used")
	}
	r := rand.New(rand.NewPCG(61, 62))
	const nb = 37
	q := make([]int8, 32*nb)
	for i := range q {
		switch b := i / 32; {
		case b == 0:
			q[i] = -128
		case b == 1:
			q[i] = 127
		case b == 2:
			q[i] = int8(-128 + 255*(i%2))
		case b == 3:
			q[i] = 0
		default:
			q[i] = int8(r.IntN(256) - 128)
		}
	}
	got := make([]int32, nb)
	q8BlockSums(q, got)
	for b := 0; b < nb; b++ {
		var want int32
		for _, v := range q[32*b : 32*b+32] {
			want += int32(v)
		}
		want *= -128
		if got[b] != want {
			t.Errorf("block %d: %d, want %d", b, got[b], want)
		}
	}
}
