package sched

import (
	"slices"
	"testing"
)

// Many long requests on a pool that holds few of them: under the old
// "evict the youngest" rule the same requests were preempted over and over
// (recomputing their whole prefix each time). The policy in victim bounds
// how often any request is preempted and every request finishes correctly.
func TestPreemptionCannotThrash(t *testing.T) {
	cfg := Config{TokenBudget: 64, MaxRunning: 8, MaxContext: 48}
	s, pool := newTestScheduler(t, 14, 4, cfg) // 56 slots: one 48-token request, a bit more
	r := newRun(s, pool)
	var reqs []Request
	for i := 1; i <= 8; i++ {
		req := Request{ID: uint64(i), Tenant: "a", Salt: "a", Prompt: prompt(i*13, 8), MaxTokens: 40}
		reqs = append(reqs, req)
		r.submit(t, req)
	}
	per := map[uint64]int{}
	for steps := 0; s.Running()+s.Waiting() > 0; steps++ {
		if steps == 5000 {
			t.Fatalf("not drained after %d steps", steps)
		}
		for _, id := range r.step(t).Evicted {
			per[id]++
		}
	}
	worst := 0
	for _, n := range per {
		worst = max(worst, n)
	}
	t.Logf("preemptions per request %v (total %d)", per, r.evicted)
	if r.evicted == 0 {
		t.Fatal("no preemption: the test needs memory pressure")
	}
	if bound := MaxPreemptions; worst > bound {
		t.Errorf("a request was preempted %d times; the policy bounds it by %d", worst, bound)
	}
	for _, req := range reqs {
		if want := reference(req, cfg.MaxContext); !slices.Equal(r.out[req.ID], want) {
			t.Errorf("request %d: %v, want %v", req.ID, r.out[req.ID], want)
		}
	}
	checkDrained(t, pool)
}
