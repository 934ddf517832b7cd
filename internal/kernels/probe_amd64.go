//go:build amd64 && !noasm

package kernels

//go:noescape
func readStream(p *byte, n int) uint64

func fmaSpin(iters int) float32

// fmaFlopsPerRound is the floating-point operations of one fmaSpin round.
const fmaFlopsPerRound = 12 * 8 * 2

func probeRead(b []byte) uint64 {
	if len(b) < 256 {
		return 0
	}
	return readStream(&b[0], len(b)&^255)
}

func probeFMA(iters int) (float32, float64) {
	return fmaSpin(iters), float64(iters) * fmaFlopsPerRound
}
