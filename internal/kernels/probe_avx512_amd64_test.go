//go:build amd64 && !noasm

package kernels

import (
	"math"
	"testing"
)

// TestFMASpinZEqualsFMASpin: every lane of the 16-lane probe runs the
// 8-lane probe's recurrence, so both return the same bits for the same
// rounds; a loop that ran a different number of rounds, or fewer chains,
// would not.
func TestFMASpinZEqualsFMASpin(t *testing.T) {
	if !has512() {
		t.Skip("this CPU has no AVX-512 F/BW/VL/VNNI: fmaSpinZ not run")
	}
	for _, n := range []int{0, 1, 2, 7, 1000, 1 << 16} {
		z, y := fmaSpinZ(n), fmaSpin(n)
		if math.Float32bits(z) != math.Float32bits(y) {
			t.Errorf("%d rounds: fmaSpinZ %v, fmaSpin %v", n, z, y)
		}
	}
	if fmaSpinZ(10) == fmaSpinZ(11) {
		t.Error("fmaSpinZ gives the same result for 10 and 11 rounds")
	}
}
