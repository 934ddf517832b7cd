package kernels

import (
	"testing"
	"time"
)

// reportCPU adds "tok/cpu-s": tokens per CPU-second spent since start. The
// benchmarks report it besides wall-clock figures because the 2-core
// machine they run on is shared: wall-clock throughput falls with other
// people's load, throughput per CPU-second much less.
func reportCPU(b *testing.B, start time.Duration, tokens float64) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(tokens/d.Seconds(), "tok/cpu-s")
	}
}
