//go:build !amd64 || noasm

package kernels

func quantizeBlocks(x []float32, qs []int8, d []float32) {
	quantizeBlocksRef(x, qs, d)
}

// cpuKernels lists the assembly kernel sets: none in this build.
func cpuKernels() []kernelSet { return nil }

// defaultRowStreams: one weight stream per thread (no assembly kernels
// read two).
func defaultRowStreams() int { return 1 }
