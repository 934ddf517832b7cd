//go:build amd64 && !noasm

package kernels

import "golang.org/x/sys/cpu"

// The assembly needs AVX2 (integer and float vectors), FMA and F16C
// (VCVTPH2PS/VCVTPS2PH). Decided once; every call then goes straight to the
// chosen functions.
func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		impl = avx2Kernels
	}
}

var avx2Kernels = kernelSet{
	name:          "avx2",
	dot:           dotFast,
	axpy:          axpyFast,
	dotF16:        dotF16Fast,
	axpyF16:       axpyF16Fast,
	f32ToF16Slice: f32ToF16SliceFast,
	softmax:       softmaxFast,
	swiglu:        swigluFast,
	rows:          rowsFast,
}
