package copymodel

import (
	"fmt"
	"testing"
	"time"
)

// TestLongSweep is the exhaustive check, run only with BULKHEAD_LONG=1: for
// vocabularies of 512, 4096 and 32000 tokens and prompts of 512, 2048 and
// 8192 tokens (the model built with an 8192 context), audit prompts with the
// canary at the start, middle and end, and a many-block prompt of 10 forks.
func TestLongSweep(t *testing.T) {
	if !longRun() {
		t.Skip("exhaustive sweep: set BULKHEAD_LONG=1 (and not -short)")
	}
	for _, vocab := range []int{MinVocab, 4096, 32000} {
		r := load(t, Options{Vocab: vocab, Context: 8192})
		for _, length := range []int{512, 2048, 8192} {
			t.Run(fmt.Sprintf("vocab%d/len%d", vocab, length), func(t *testing.T) {
				start := time.Now()
				var s copyStats
				for i, pos := range []int{1, length / 2, length - 10} {
					auditTrial(t, r, &s, length, pos, uint64(vocab+length+i))
				}
				b := manyBlockTrials(t, r, 1, length, 10, uint64(vocab+length))
				s.trials += b.trials
				s.exact += b.exact
				s.minMargin = min(s.minMargin, b.minMargin)
				t.Logf("%d/%d exact, smallest top-1 margin %.1f logits, %v", s.exact, s.trials, s.minMargin, time.Since(start).Round(time.Millisecond))
			})
		}
	}
}
