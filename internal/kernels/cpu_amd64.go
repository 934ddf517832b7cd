//go:build amd64 && !noasm

package kernels

import "golang.org/x/sys/cpu"

// cpuKernels lists the assembly kernel sets this CPU can run, best last.
// AVX2 needs AVX2 (integer and float vectors), FMA and F16C
// (VCVTPH2PS/VCVTPS2PH); AVX-512 needs that and has512.
func cpuKernels() []kernelSet {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return nil
	}
	if has512() {
		return []kernelSet{avx2Kernels, avx512Kernels}
	}
	return []kernelSet{avx2Kernels}
}

// defaultRowStreams is rowStreams' default: two on Intel CPUs, one
// elsewhere (streams.go says why).
func defaultRowStreams() int {
	b, c, d := cpuidVendor()
	if b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e { // "GenuineIntel"
		return 2
	}
	return 1
}

// cpuidVendor returns CPUID leaf 0's vendor words (EBX, ECX, EDX).
func cpuidVendor() (ebx, ecx, edx uint32)

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
