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
	if cpuVendor() == "GenuineIntel" {
		return 2
	}
	return 1
}

// cpuVendor is CPUID leaf 0's vendor string ("GenuineIntel",
// "AuthenticAMD", ...): EBX, EDX, ECX as twelve bytes.
func cpuVendor() string {
	b, c, d := cpuidVendor()
	var v [12]byte
	for i, w := range [3]uint32{b, d, c} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	return string(v[:])
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
