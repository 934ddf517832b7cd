package sched

import (
	"fmt"
	"testing"
)

// BenchmarkStep measures the scheduler's own cost for one decode step of n
// running sequences (Step plus Complete, no model): ns/token is per
// sequence-token. Finished sequences are replaced, so prefills mix in
// about once per 500 steps per sequence.
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("running=%d", n), func(b *testing.B) {
			const maxCtx = 512
			cfg := Config{TokenBudget: n * 8, MaxRunning: n, MaxContext: maxCtx}
			s, _ := newTestScheduler(b, n*maxCtx/16+1, 16, cfg)
			next := uint64(0)
			submit := func() {
				next++
				a, err := Admit(Request{ID: next, Tenant: fmt.Sprint(next % 4), Prompt: prompt(int(next), 8), MaxTokens: 1 << 30}, s.Limits())
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Submit(a); err != nil {
					b.Fatal(err)
				}
			}
			for range n {
				submit()
			}
			sampled := make([]int32, n)
			tokens := 0
			for b.Loop() {
				plan, err := s.Step()
				if err != nil {
					b.Fatal(err)
				}
				tokens += plan.Tokens()
				ups, err := s.Complete(sampled[:len(plan.Items)])
				if err != nil {
					b.Fatal(err)
				}
				for _, u := range ups {
					if u.State == StateFinished {
						submit()
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
		})
	}
}
