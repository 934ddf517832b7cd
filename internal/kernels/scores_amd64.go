//go:build amd64 && !noasm

package kernels

//go:noescape
func scoresF16x3(kt *uint16, ld, hd8 int, q *float32, qs int, out *float32, os int, mask uint16)

//go:noescape
func scoresF16x1(kt *uint16, ld, hd8 int, q *float32, qs int, out *float32, os int, mask uint16)

// scoresFast: the kernels are AVX-512 (masked sixteen-key blocks), used
// with the AVX-512 set.
func scoresFast() bool { return using512() }

// scoresF16Fast runs sixteen keys at a time against three queries at a
// time (scoresF16x3: 24 accumulators), the last queries one by one; the
// last block of keys is masked (its loads and stores touch only the keys
// there are).
func scoresF16Fast(out []float32, ldo int, kt []uint16, ld, n, hd8 int, q []float32, hd, nq int) {
	for k0 := 0; k0 < n; k0 += 16 {
		mask := uint16(0xffff)
		if r := n - k0; r < 16 {
			mask = 1<<r - 1
		}
		i := 0
		for ; i+3 <= nq; i += 3 {
			scoresF16x3(&kt[k0], 2*ld, hd8, &q[i*hd], 4*hd, &out[i*ldo+k0], 4*ldo, mask)
		}
		for ; i < nq; i++ {
			scoresF16x1(&kt[k0], 2*ld, hd8, &q[i*hd], 4*hd, &out[i*ldo+k0], 4*ldo, mask)
		}
	}
}
