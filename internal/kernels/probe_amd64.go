//go:build amd64 && !noasm

package kernels

//go:noescape
func readStream(p *byte, n int) uint64

func fmaSpin(iters int) float32

func fmaSpinZ(iters int) float32

// fmaFlopsPerRound is the floating-point operations of one fmaSpin round.
const fmaFlopsPerRound = 12 * 8 * 2

func probeRead(b []byte) uint64 {
	if len(b) < 256 {
		return 0
	}
	return readStream(&b[0], len(b)&^255)
}

// probeFMA spins in the widest vectors the kernel set in use computes
// with: 16 lanes under the AVX-512 set, whose tiles are 512-bit, else 8.
func probeFMA(iters int) (float32, float64) {
	if using512() {
		return fmaSpinZ(iters), 2 * float64(iters) * fmaFlopsPerRound
	}
	return fmaSpin(iters), float64(iters) * fmaFlopsPerRound
}

// FMAProbeBits is the vector width of FMAPeak's fused multiply-adds.
func FMAProbeBits() int {
	if using512() {
		return 512
	}
	return 256
}
