package kernels

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used (user + system). The
// benchmarks report throughput per CPU-second besides wall-clock figures,
// because the 2-core machine they run on is shared: wall-clock figures fall
// with other people's load, CPU-time figures much less so.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds "tok/cpu-s": tokens per CPU-second spent since start.
func reportCPU(b *testing.B, start time.Duration, tokens float64) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(tokens/d.Seconds(), "tok/cpu-s")
	}
}
