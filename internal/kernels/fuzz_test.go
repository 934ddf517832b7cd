package kernels

import (
	"math"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// FuzzMatMulOnArbitraryWeightBytes feeds arbitrary bytes (any scale,
// including NaN and infinity F16 patterns) as weight blocks: decoding must
// not panic, and the fast and reference products must agree bit for bit
// (NaN with NaN).
func FuzzMatMulOnArbitraryWeightBytes(f *testing.F) {
	f.Add(uint8(3), []byte{0x00, 0x3c, 1, 2, 3}, uint8(2))
	f.Add(uint8(5), []byte{0xff, 0x7c, 0x80, 0x7f}, uint8(1))
	p := NewPool(2)
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, ti uint8, seed []byte, batchB uint8) {
		typ := allTypes[int(ti)%len(allTypes)]
		if len(seed) == 0 {
			return
		}
		be := typ.BlockElems()
		cols := be * 2
		if be == 1 {
			cols = 1 + len(seed)%40
		}
		rows := 1 + len(seed)%5
		batch := 1 + int(batchB)%6
		rb, _ := typ.RowBytes(cols)
		data := make([]byte, rows*rb)
		for i := range data {
			data[i] = seed[i%len(seed)] ^ byte(i*131)
		}
		m, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]float32, cols)
		m.DequantizeRow(row, rows-1)
		x := make([]float32, batch*cols)
		for i := range x {
			x[i] = float32(int(seed[i%len(seed)])-128) / 16
		}
		got := make([]float32, batch*rows)
		want := make([]float32, batch*rows)
		p.MatMul(got, m, x, batch)
		MatMulRef(want, m, x, batch)
		for i := range got {
			gn, wn := math.IsNaN(float64(got[i])), math.IsNaN(float64(want[i]))
			if gn != wn || (!gn && !sameBits(got[i], want[i])) {
				t.Fatalf("%s out[%d]: fast %g ref %g", typ, i, got[i], want[i])
			}
		}
	})
}

var _ = gguf.F32

// FuzzQuantizeRoundTrip encodes arbitrary float bit patterns: Quantize must
// not panic on NaN or infinity, and for moderate finite inputs every decoded
// value must lie within the block's magnitude (plus one quantization step).
func FuzzQuantizeRoundTrip(f *testing.F) {
	f.Add(uint8(3), []byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf})
	f.Add(uint8(6), []byte{0, 0, 0xc0, 0x7f}) // NaN
	f.Fuzz(func(t *testing.T, ti uint8, raw []byte) {
		typ := quantTypes[int(ti)%len(quantTypes)]
		n := max(typ.BlockElems(), 256)
		x := make([]float32, n)
		finite := true
		for i := range x {
			if len(raw) >= 4 {
				j := 4 * (i % (len(raw) / 4))
				x[i] = math.Float32frombits(uint32(raw[j]) | uint32(raw[j+1])<<8 | uint32(raw[j+2])<<16 | uint32(raw[j+3])<<24)
			}
			if math.IsNaN(float64(x[i])) || math.Abs(float64(x[i])) > 1e4 {
				finite = false
			}
		}
		data, err := Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float32, n)
		dequantize(typ, y, data)
		if !finite {
			return
		}
		amax := float64(absMax(x))
		for i, v := range y {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > amax*1.5+1e-6 {
				t.Fatalf("%s: x[%d]=%g decoded %g (block max %g)", typ, i, x[i], v, amax)
			}
		}
	})
}
