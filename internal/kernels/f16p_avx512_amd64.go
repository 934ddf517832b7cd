//go:build amd64 && !noasm

package kernels

//go:noescape
func f16pDot1Z(w *byte, groups, steps int, x *float32, out *float32)

// packsF16 reports whether NewMatrix repacks an F16 matrix of cols columns
// for the AVX-512 set's one-token rows (f16pack.go): only when that set is
// the one in use, so another set does not pay for a copy it never reads,
// and only with one weight stream per thread (rowStreams): the packed
// copy is one stream, the unpacked halves two.
func packsF16(cols int) bool {
	return using512() && rowStreams == 1 && cols > 0 && cols%8 == 0
}

// rowsF16Z computes F16 rows [r0,r1): batches of fewer than a tile of
// tokens from the packed groups, one token at a time, a group the range
// cuts computed whole into a scratch tile and its rows in range copied
// out; larger batches (and unpacked matrices) through rowsFloat's tiles,
// whose per-(row, token) operations are the same.
func rowsF16Z(out []float32, m *Matrix, a *activation, r0, r1 int) {
	if m.f16p == nil || a.batch >= tile || r1 <= r0 {
		rowsFloat(out, m, a, r0, r1)
		return
	}
	steps := a.cols / 8
	gb := steps * f16pStep
	for b := 0; b < a.batch; b++ {
		x := &a.x[b*a.cols]
		o := out[b*m.Rows : (b+1)*m.Rows]
		part := func(lo, hi int) { // rows [lo, hi) of one group
			g := lo / 4
			var tmp [4]float32
			f16pDot1Z(&m.f16p[g*gb], 1, steps, x, &tmp[0])
			copy(o[lo:hi], tmp[lo-4*g:hi-4*g])
		}
		r := r0
		if r%4 != 0 {
			hi := min(r1, r/4*4+4)
			part(r, hi)
			r = hi
		}
		if g0, g1 := r/4, r1/4; g1 > g0 {
			f16pDot1Z(&m.f16p[g0*gb], g1-g0, steps, x, &o[4*g0])
			r = 4 * g1
		}
		if r < r1 {
			part(r, r1)
		}
	}
}
