package kernels

import (
	"fmt"
	"os"
	"strings"
)

// KernelsEnv names the environment variable that forces a kernel set
// (avx512, avx2 or ref) instead of the best one this CPU supports; read
// once, at initialisation.
const KernelsEnv = "BULKHEAD_KERNELS"

// usable are the kernel sets this CPU runs, the reference first and the
// best last; fixed at initialisation.
var usable []kernelSet

func init() {
	usable = append([]kernelSet{refKernels}, cpuKernels()...)
	impl = usable[len(usable)-1]
	if v := os.Getenv(KernelsEnv); v != "" {
		if err := setKernels(v); err != nil {
			fmt.Fprintf(os.Stderr, "bulkhead: %s=%s ignored: %v; using %s\n", KernelsEnv, v, err, impl.name)
		}
	}
	if v := os.Getenv(RowStreamsEnv); v != "" {
		if err := setRowStreams(v); err != nil {
			fmt.Fprintf(os.Stderr, "bulkhead: %s=%s ignored: %v; using %d\n", RowStreamsEnv, v, err, rowStreams)
		}
	}
}

// KernelSets names the kernel sets this CPU can run, the reference ("go")
// first and the default last.
func KernelSets() []string {
	names := make([]string, len(usable))
	for i, k := range usable {
		names[i] = k.name
	}
	return names
}

// setKernels makes the named set (a KernelSets name, or "ref" for "go")
// the one in use. Not safe while kernels run: for initialisation and
// tests.
func setKernels(name string) error {
	if name == "ref" {
		name = refKernels.name
	}
	for _, k := range usable {
		if k.name == name {
			impl = k
			return nil
		}
	}
	return fmt.Errorf("kernel set %q not supported on this CPU (have %s)", name, strings.Join(KernelSets(), ", "))
}
