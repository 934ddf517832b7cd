package sched

import (
	"errors"
	"strings"
	"testing"
)

func TestAdmitRejectsPromptLongerThanContext(t *testing.T) {
	prompt := func(n int) []int32 { return make([]int32, n) }
	lim := Limits{MaxContext: 100, PoolTokens: 200}
	cases := []struct {
		name      string
		prompt    int
		lim       Limits
		wantLimit int // 0: admitted
		limitName string
	}{
		{"prompt plus one fits exactly", 99, lim, 0, ""},
		{"prompt equal to max context", 100, lim, 99, ""},
		{"prompt far beyond max context", 1_048_576, lim, 99, ""},
		{"pool smaller than context", 90, Limits{MaxContext: 100, PoolTokens: 80}, 79, "KV pool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Admit(Request{ID: 1, Prompt: prompt(tc.prompt), MaxTokens: 1}, tc.lim)
			if tc.wantLimit == 0 {
				if err != nil || a == nil {
					t.Fatalf("Admit = %v, %v; want admitted", a, err)
				}
				return
			}
			var ce *ContextLengthError
			if a != nil || !errors.As(err, &ce) || !errors.Is(err, ErrContextLength) {
				t.Fatalf("Admit = %v, %v; want ContextLengthError", a, err)
			}
			if ce.PromptTokens != tc.prompt || ce.Limit != tc.wantLimit || ce.LimitName != tc.limitName {
				t.Fatalf("error carries %d tokens, limit %d (%s); want %d, %d (%s)",
					ce.PromptTokens, ce.Limit, ce.LimitName, tc.prompt, tc.wantLimit, tc.limitName)
			}
		})
	}
}

func TestAdmitRejectsMalformedRequests(t *testing.T) {
	lim := Limits{MaxContext: 100, PoolTokens: 100}
	for name, r := range map[string]Request{
		"zero id":        {ID: 0, Prompt: []int32{1}, MaxTokens: 1},
		"empty prompt":   {ID: 1, MaxTokens: 1},
		"no max tokens":  {ID: 1, Prompt: []int32{1}, MaxTokens: 0},
		"negative limit": {ID: 1, Prompt: []int32{1}, MaxTokens: -3},
	} {
		if a, err := Admit(r, lim); a != nil || !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: Admit = %v, %v; want ErrBadRequest", name, a, err)
		}
	}
}

func TestSubmitRechecksLimitsBeforeAllocating(t *testing.T) {
	s, pool := newTestScheduler(t, 8, 4, Config{TokenBudget: 8, MaxRunning: 2, MaxContext: 16})
	// Admitted by a gateway that believed the context was larger.
	a, err := Admit(Request{ID: 1, Tenant: "x", Prompt: make([]int32, 20), MaxTokens: 1}, Limits{MaxContext: 64, PoolTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(a); !errors.Is(err, ErrContextLength) {
		t.Fatalf("Submit = %v, want ErrContextLength", err)
	}
	if s.Waiting() != 0 || pool.FreePages() != pool.UsablePages() {
		t.Fatalf("rejected request left %d waiting, %d of %d pages free", s.Waiting(), pool.FreePages(), pool.UsablePages())
	}
	plan, err := s.Step()
	if err != nil || len(plan.Items) != 0 {
		t.Fatalf("Step after rejection = %+v, %v; want an empty plan", plan, err)
	}
}

func TestSubmitRefusesTheSameAdmissionTwice(t *testing.T) {
	s, _ := newTestScheduler(t, 8, 4, Config{TokenBudget: 8, MaxRunning: 2, MaxContext: 16})
	a, _ := Admit(Request{ID: 1, Tenant: "x", Prompt: []int32{1}, MaxTokens: 1}, s.Limits())
	if err := s.Submit(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(a); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("second Submit = %v, want ErrBadRequest", err)
	}
	if err := s.Submit(nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("Submit(nil) = %v, want ErrBadRequest", err)
	}
}

func TestCheckCapacityNamesPoolAndContext(t *testing.T) {
	err := CheckCapacity(681280, 1048576)
	if !errors.Is(err, ErrPoolTooSmall) || !strings.Contains(err.Error(), "681280") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("CheckCapacity = %v; want ErrPoolTooSmall naming both numbers", err)
	}
	if err := CheckCapacity(4096, 4096); err != nil {
		t.Fatalf("a pool of exactly max context was refused: %v", err)
	}
}

func TestNewRefusesPoolSmallerThanContext(t *testing.T) {
	pool := newTestPool(t, 4, 4) // 16 tokens
	if _, err := New(Config{TokenBudget: 8, MaxRunning: 2, MaxContext: 17}, pool); !errors.Is(err, ErrPoolTooSmall) {
		t.Fatalf("New = %v, want ErrPoolTooSmall", err)
	}
}
