package kernels

import "testing"

// TestProbesMeasureSomething checks the yardsticks run and return a
// positive rate on every thread count (no timed assertion: only > 0).
func TestProbesMeasureSomething(t *testing.T) {
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		buf := make([]byte, 4<<20)
		if bw := ReadBandwidth(p, buf, 2); !(bw > 0) {
			t.Errorf("%d threads: read bandwidth %g, want > 0", threads, bw)
		}
		if fl := FMAPeak(p, 1); !(fl > 0) {
			t.Errorf("%d threads: FMA peak %g, want > 0", threads, fl)
		}
		p.Close()
	}
}

// TestReadStreamTouchesEveryBlock checks the bandwidth probe reads all of
// its buffer: flipping a byte anywhere in it (in the low half of a 16-byte
// lane, the part of the fold returned) changes the result.
func TestReadStreamTouchesEveryBlock(t *testing.T) {
	buf := make([]byte, 4096)
	base := probeRead(buf)
	for _, i := range []int{0, 36, 256, 2050, 4080} {
		buf[i] = 0x80
		if probeRead(buf) == base {
			t.Errorf("byte %d not read", i)
		}
		buf[i] = 0
	}
}
