//go:build amd64 && !noasm

package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// TestKScalesQ4KEqualsGo holds the assembly scale decode to the Go one on
// random super-blocks (every bit pattern of the twelve scale bytes is a
// valid encoding); [8:16) of each super-block is unread and not compared.
func TestKScalesQ4KEqualsGo(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const nsb = 37
	row := make([]byte, 144*nsb)
	for i := range row {
		row[i] = byte(r.Uint32())
	}
	got, want := make([]int16, 32*nsb), make([]int16, 32*nsb)
	kScales(gguf.Q4_K, row, got)
	kScalesQ4KGo(row, want)
	for b := 0; b < nsb; b++ {
		for i := 0; i < 32; i++ {
			if i >= 8 && i < 16 {
				continue
			}
			if g, w := got[32*b+i], want[32*b+i]; g != w {
				t.Fatalf("super-block %d word %d: %d, want %d", b, i, g, w)
			}
		}
	}
}
