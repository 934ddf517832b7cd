package kernels

import (
	"fmt"
	"strconv"
)

// RowStreamsEnv names the environment variable that sets rowStreams (1 or
// 2) instead of the CPU's default; read once, at initialisation.
const RowStreamsEnv = "BULKHEAD_ROW_STREAMS"

// rowStreams is how many weight streams a thread's one-token decode rows
// walk at once. Decode is a read of every weight once per token, and how
// fast one core reads depends on how many runs its hardware prefetcher
// follows. On Intel, two runs far apart read faster than one: Q4_K rows
// from memory, one thread, 7.6–7.9 → 9.4–10.0 GB/cpu-s (a plain read
// probe: 9.0–9.7), and F16's two-stream halves were as fast as the
// one-stream packed copy or faster (1B F16 tg: 10.7–11.1 vs 9.5–9.8 tok/s
// early in one session, 10.4 vs 10.4–11.2 at its end) without the copy's
// memory. On AMD Zen 5 the packed
// one-stream F16 copy ran at 0.94–0.97 of the read probe against 0.55
// for the halves. So: two on Intel, one elsewhere.
//
// With two, the K-quant one-token rows alternate between the two halves
// of their range (kRowsStreams) and the packed F16 groups are read as two
// halves side by side (f16pDot2Z). Fixed before any Matrix exists.
var rowStreams = defaultRowStreams()

// setRowStreams parses an RowStreamsEnv value.
func setRowStreams(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 2 {
		return fmt.Errorf("want 1 or 2")
	}
	rowStreams = n
	return nil
}

// RowStreams reports rowStreams, for benchmark reports.
func RowStreams() int { return rowStreams }
