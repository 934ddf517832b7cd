package kernels

// ScoresF16 computes attention scores from transposed F16 keys: for query
// i < nq (q[i*hd:(i+1)*hd]) and key k < n, out[i*ldo+k] is the dot product
// of key k — kt[d*ld+k] for d < hd — with the query, with exactly the
// float operations MatMul does for an F16 matrix whose row k is that key
// (dotFloatRef: eight lanes over the columns ≡ l mod 8, hsum8, then the
// columns past the last multiple of eight), so the scores are bit-equal
// to MatMul's whichever computes them.
//
// Keys in columns put sixteen keys in one vector, each with its eight
// lanes in eight registers: the horizontal sum becomes seven vector adds
// per sixteen keys, where MatMul's rows (short: hd columns) spend as long
// on the sums as on the products. Use it when ScoresF16Fast reports the
// fast kernel; otherwise MatMul over row-major keys is faster.
func ScoresF16(out []float32, ldo int, kt []uint16, ld, n, hd int, q []float32, nq int) {
	if n <= 0 || nq <= 0 || hd <= 0 {
		return
	}
	_ = kt[(hd-1)*ld+n-1]
	_ = q[nq*hd-1]
	_ = out[(nq-1)*ldo+n-1]
	hd8 := hd &^ 7
	if hd8 > 0 && scoresFast() {
		scoresF16Fast(out, ldo, kt, ld, n, hd8, q, hd, nq)
	} else {
		scoresF16Ref(out, ldo, kt, ld, n, hd8, q, hd, nq)
	}
	for i := 0; i < nq && hd8 < hd; i++ { // columns past hd8 continue each chain
		qi := q[i*hd : (i+1)*hd]
		for k := 0; k < n; k++ {
			s := out[i*ldo+k]
			for d := hd8; d < hd; d++ {
				s = fma32(F16ToF32(kt[d*ld+k]), qi[d], s)
			}
			out[i*ldo+k] = s
		}
	}
}

// ScoresF16Fast reports whether ScoresF16 runs an assembly kernel here.
func ScoresF16Fast() bool { return scoresFast() }

// scoresF16Ref is ScoresF16's first hd8 columns in Go: the reference.
func scoresF16Ref(out []float32, ldo int, kt []uint16, ld, n, hd8 int, q []float32, hd, nq int) {
	for i := 0; i < nq; i++ {
		qi := q[i*hd : (i+1)*hd]
		for k := 0; k < n; k++ {
			var acc [8]float32
			for c := 0; c < hd8; c += 8 {
				for l := 0; l < 8; l++ {
					acc[l] = fma32(F16ToF32(kt[(c+l)*ld+k]), qi[c+l], acc[l])
				}
			}
			out[i*ldo+k] = hsum8(&acc)
		}
	}
}
