//go:build amd64 && !noasm

package kernels

//go:noescape
func f16pDot1Z(w *byte, groups, steps int, x *float32, out *float32)

//go:noescape
func f16pDot2Z(wa, wb *byte, groups, steps int, x *float32, oa, ob *float32)

// packsF16 reports whether NewMatrix repacks an F16 matrix of cols columns
// for the AVX-512 set's one-token rows (f16pack.go): only when that set is
// the one in use, so another set does not pay for a copy it never reads.
// Whatever rowStreams is: with two, the packed groups are read as two
// streams (f16pDot2Z), which in cache ran 2.5× the unpacked halves.
func packsF16(cols int) bool {
	return using512() && cols > 0 && cols%8 == 0
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
			f16pGroups(m.f16p, gb, g0, g1, steps, x, o)
			r = 4 * g1
		}
		if r < r1 {
			part(r, r1)
		}
	}
}

// f16pGroups computes whole groups [g0, g1) into o: in one stream, or
// with two rowStreams the two halves of the range side by side (an odd
// group last, alone).
func f16pGroups(p []byte, gb, g0, g1, steps int, x *float32, o []float32) {
	n := g1 - g0
	if rowStreams < 2 || n < 2 {
		f16pDot1Z(&p[g0*gb], n, steps, x, &o[4*g0])
		return
	}
	h := n / 2
	f16pDot2Z(&p[g0*gb], &p[(g0+h)*gb], h, steps, x, &o[4*g0], &o[4*(g0+h)])
	if n%2 == 1 {
		f16pDot1Z(&p[(g1-1)*gb], 1, steps, x, &o[4*(g1-1)])
	}
}
