package sched

import "testing"

// TestSteadyDecodeStepAllocatesNothing pins that once sequences decode, a
// step — Step with the ownership check of every page, Complete with its
// commits, sealing full pages into the prefix cache and taking new ones —
// allocates nothing (DESIGN I2's check stays on every page every step).
func TestSteadyDecodeStepAllocatesNothing(t *testing.T) {
	const n, ps, maxCtx = 16, 16, 512
	s, _ := newTestScheduler(t, n*maxCtx/ps+1, ps, Config{TokenBudget: n * 8, MaxRunning: n, MaxContext: maxCtx})
	for i := range n {
		tenant := []string{"a", "b", "c", "d"}[i%4]
		a, err := Admit(Request{ID: uint64(i + 1), Tenant: tenant, Salt: tenant, Prompt: prompt(i, 8), MaxTokens: 1 << 30}, s.Limits())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Submit(a); err != nil {
			t.Fatal(err)
		}
	}
	sampled := make([]int32, n)
	decodes := 0
	step := func() {
		plan, err := s.Step()
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range plan.Items {
			sampled[i] = int32(it.Pos%(vocab-1)) + 1
			if len(it.Tokens) == 1 && it.Sample {
				decodes++
			}
		}
		ups, err := s.Complete(sampled[:len(plan.Items)])
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ups {
			if u.Err != nil || !u.HasToken || u.State != StateDecoding {
				t.Fatalf("update %+v, want a decoded token", u)
			}
		}
	}
	step() // prefill
	decodes = 0
	// A run is a page's worth of steps: every sequence seals a full page
	// into the prefix cache and takes a fresh one.
	const runs = 4
	allocs := testing.AllocsPerRun(runs, func() {
		for range ps {
			step()
		}
	})
	if want := (runs + 1) * ps * n; decodes != want {
		t.Fatalf("%d decode items ran, want %d: the steps did not decode", decodes, want)
	}
	if allocs != 0 {
		t.Fatalf("a page's worth of decode steps of %d sequences allocated %v times, want 0", n, allocs)
	}
}
