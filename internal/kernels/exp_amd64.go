//go:build amd64 && !noasm

package kernels

//go:noescape
func expSumAVX(x *float32, m float32, n int) float32

//go:noescape
func maxAVX(x *float32, n int) float32

//go:noescape
func scaleAVX(x *float32, a float32, n int)

//go:noescape
func swigluAVX(out, gate, up *float32, n int)

func softmaxFast(x []float32) {
	n8 := len(x) &^ 7
	m := x[0]
	if n8 > 0 {
		m = maxAVX(&x[0], n8)
	}
	for _, v := range x[n8:] {
		m = max(m, v)
	}
	var s float32
	if n8 > 0 {
		s = expSumAVX(&x[0], m, n8)
	}
	s = softmaxTail(x, n8, m, s)
	inv := 1 / s
	if n8 > 0 {
		scaleAVX(&x[0], inv, n8)
	}
	scaleRef(x[n8:], inv)
}

func swigluFast(out, gate, up []float32) {
	n8 := len(gate) &^ 7
	if n8 > 0 {
		swigluAVX(&out[0], &gate[0], &up[0], n8)
	}
	swigluRef(out[n8:], gate[n8:], up[n8:])
}
