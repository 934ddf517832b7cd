//go:build !unix

package kernels

import "time"

// cpuTime is unavailable here; the benchmarks then skip "tok/cpu-s".
func cpuTime() time.Duration { return 0 }
