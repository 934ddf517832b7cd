//go:build !amd64 || noasm

package kernels

func scoresFast() bool { return false }

func scoresF16Fast(out []float32, ldo int, kt []uint16, ld, n, hd8 int, q []float32, hd, nq int) {
	scoresF16Ref(out, ldo, kt, ld, n, hd8, q, hd, nq)
}
