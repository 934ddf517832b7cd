package kernels

import (
	"sync/atomic"
	"time"
)

// Yardsticks measured in the same run as a benchmark, so a result can be
// stated as a fraction of what this machine can do right now (a shared or
// throttled host moves both together).

// probeSink keeps the probes' results alive so the loops are not removed.
var probeSink atomic.Uint64

// ReadBandwidth is the best of reps passes of every pool thread streaming
// its share of buf (which should be much larger than the last-level
// cache), in bytes per second.
func ReadBandwidth(p *Pool, buf []byte, reps int) float64 {
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // fault every page in before timing
	}
	return ReadMappedBandwidth(p, buf, reps)
}

// ReadMappedBandwidth is ReadBandwidth without writing to buf, for memory
// that is backed already and may be read-only (a file's mapping, such as a
// model's weights): the rate of reading those very pages.
func ReadMappedBandwidth(p *Pool, buf []byte, reps int) float64 {
	n := p.Threads()
	share := len(buf) / n &^ 255
	if share == 0 {
		return 0
	}
	best := 0.0
	for r := 0; r < max(1, reps); r++ {
		start := time.Now()
		p.Parallel(n, func(i int) {
			probeSink.Add(probeRead(buf[i*share : (i+1)*share]))
		})
		if bw := float64(n*share) / time.Since(start).Seconds(); bw > best {
			best = bw
		}
	}
	return best
}

// FMAPeak is the best of reps runs of every pool thread issuing
// independent fused multiply-adds (in the widest vectors the kernels use),
// in floating-point operations per second.
func FMAPeak(p *Pool, reps int) float64 {
	const iters = 1 << 21
	n := p.Threads()
	best := 0.0
	for r := 0; r < max(1, reps); r++ {
		var flops atomic.Uint64
		start := time.Now()
		p.Parallel(n, func(int) {
			v, f := probeFMA(iters)
			flops.Add(uint64(f))
			if v == 42 {
				probeSink.Add(1)
			}
		})
		if fl := float64(flops.Load()) / time.Since(start).Seconds(); fl > best {
			best = fl
		}
	}
	return best
}
