package kernels

import (
	"runtime"
	"sync"
)

// F16 weights for one-token products on AVX-512 are repacked at load, four
// rows at a time, so that one 64-byte line holds the same eight columns of
// four rows and a group of four rows is one forward stream:
//
//	group g (rows 4g..4g+3; rows past the matrix's last are zero), step s
//	(columns 8s..8s+7), at (g×steps + s)×64 bytes: for j in 0..3, row
//	4g+j's eight F16 values at 16j.
//
// f16pDot1Z then widens two rows per 512-bit register (VCVTPH2PS) and keeps
// each row's eight-lane chain of fused multiply-adds in dotFloatRef's
// order, so a result is the reference's bits. Rows two at a time from one
// stream gave two independent chains per thread (FMA latency bound, 25-29
// GB/cpu-s in cache on Zen 5), four rows from four streams (DOTQUARTERS)
// were slower from memory; a packed group gives four chains from one
// stream (f16pDot2Z reads two groups at once, eight chains from two
// streams, where the CPU reads two streams faster: rowStreams). Only
// matrices whose columns are a multiple of eight are packed;
// the copy is as large as the F16 data, which stays mapped for the prefill
// tiles and for dequantizing rows.

// f16pStep is the packed size of one eight-column step of a group.
const f16pStep = 64

// packF16 repacks rows×cols of F16 data (cols a multiple of eight).
func packF16(data []byte, rows, cols int) []byte {
	steps := cols / 8
	groups := (rows + 3) / 4
	out := make([]byte, groups*steps*f16pStep)
	packParallel(len(out), groups, func(g0, g1 int) {
		rb := 2 * cols
		for g := g0; g < g1; g++ {
			for j := 0; j < 4 && 4*g+j < rows; j++ {
				row := data[(4*g+j)*rb : (4*g+j+1)*rb]
				dst := out[g*steps*f16pStep+16*j:]
				for s := 0; s < steps; s++ {
					copy(dst[s*f16pStep:s*f16pStep+16], row[16*s:16*s+16])
				}
			}
		}
	})
	return out
}

// packParallel runs pack over runs of [0, groups), one goroutine per CPU
// when the packed copy (size bytes) is large: packing is a copy from the
// mapped file, and a model's packed matrices are most of its weight (a
// 1B-shape Q8_0 file loaded in 1.1 s before packing, 2.0 s packed on one
// goroutine).
func packParallel(size, groups int, pack func(g0, g1 int)) {
	workers := min(runtime.GOMAXPROCS(0), size/(4<<20))
	if workers <= 1 {
		pack(0, groups)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(g0, g1 int) {
			defer wg.Done()
			pack(g0, g1)
		}(groups*w/workers, groups*(w+1)/workers)
	}
	wg.Wait()
}
