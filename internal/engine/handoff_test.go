package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// copyPages moves the KV of positions [0, n) between two engines' pools, as
// the transfer engine does over TCP.
func copyPages(layers int, from, to *Engine, src, dst []int32, n int) {
	ps := from.Pool().PageSize()
	for l := range layers {
		for i := 0; i*ps < n; i++ {
			k, v := from.Pool().PageF16(l, int(src[i]))
			dk, dv := to.Pool().PageF16(l, int(dst[i]))
			copy(dk, k)
			copy(dv, v)
		}
	}
}

func TestPrefillDecodeHandoffMatchesOneEngine(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{2, 17, 33, 90} {
		req := Request{Prompt: randPrompt(rng, n), MaxTokens: 8, IgnoreEOS: true, Logprobs: true, TopLogprobs: 2}
		mono := run(t, newEngine(t, Config{}, 1024, 16), req)

		pre := newEngine(t, Config{TokenBudget: 16, MaxRunning: 4}, 1024, 16)
		dec := newEngine(t, Config{}, 1024, 16)
		res, err := dec.Reserve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		h, err := pre.Prefill(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if h.Tokens != n-1 || len(h.Pages) != len(res.Pages) {
			t.Fatalf("handoff of %d tokens on %d pages; reservation %d pages", h.Tokens, len(h.Pages), len(res.Pages))
		}
		// The handoff comes before its last chunk is computed; layers
		// become final one by one, and the channel closes after the step.
		if h.Ready == nil {
			t.Fatal("prefill handoff has no layer channel")
		}
		last := 0
		for l := range h.Ready {
			if l < last || l > tiny(t).Config.Layers {
				t.Fatalf("layer counts went %d then %d", last, l)
			}
			last = l
		}
		if last != tiny(t).Config.Layers {
			t.Fatalf("layer channel closed at %d of %d layers", last, tiny(t).Config.Layers)
		}
		copyPages(tiny(t).Config.Layers, pre, dec, h.Pages, res.Pages, h.Tokens)
		res.Done(nil)
		h.Release(nil)
		got := collect(res.Events)
		if got.err != nil {
			t.Fatal(got.err)
		}
		if !slices.Equal(got.tokens, mono.tokens) || !slices.Equal(got.logprobs, mono.logprobs) {
			t.Fatalf("prompt %d: disaggregated %v %v\nmonolithic %v %v", n, got.tokens, got.logprobs, mono.tokens, mono.logprobs)
		}
		waitDrained(t, pre)
		waitDrained(t, dec)
	}
}

func TestFailedTransferEndsTheStreamAndFreesBothSides(t *testing.T) {
	pre := newEngine(t, Config{}, 1024, 16)
	dec := newEngine(t, Config{}, 1024, 16)
	req := Request{Prompt: randPrompt(rand.New(rand.NewPCG(1, 1)), 40), MaxTokens: 4}
	res, err := dec.Reserve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	h, err := pre.Prefill(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if pre.Pool().FreePages() == pre.Pool().UsablePages() {
		t.Fatal("prefill pages were freed before the transfer released them")
	}
	boom := errors.New("checksum mismatch on page 1")
	res.Done(boom)
	res.Done(nil) // later calls do nothing
	h.Release(boom)
	got := collect(res.Events)
	if !errors.Is(got.err, ErrAborted) || len(got.tokens) != 0 {
		t.Fatalf("after a failed transfer: %d tokens, err %v", len(got.tokens), got.err)
	}
	waitDrained(t, pre)
	waitDrained(t, dec)
}

func TestReserveAdmitsBeforeAllocating(t *testing.T) {
	dec := newEngine(t, Config{MaxContext: 64}, 1024, 16)
	var cl *ContextLengthError
	if _, err := dec.Reserve(context.Background(), Request{Prompt: make([]int32, 64), MaxTokens: 1}); !errors.As(err, &cl) {
		t.Fatalf("oversized reservation: %v", err)
	}
	if _, err := dec.Reserve(context.Background(), Request{Prompt: []int32{1}, MaxTokens: 1}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("one-token reservation: %v", err)
	}
	if dec.Pool().FreePages() != dec.Pool().UsablePages() {
		t.Fatal("a refused reservation allocated pages")
	}
}

func TestCancelledPrefillFreesItsPages(t *testing.T) {
	pre := newEngine(t, Config{TokenBudget: 8, MaxRunning: 4}, 1024, 16)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pre.Prefill(ctx, Request{Prompt: make([]int32, 200), MaxTokens: 1}); !errors.Is(err, ErrAborted) {
		t.Fatalf("prefill with a cancelled context: %v", err)
	}
	waitDrained(t, pre)
}
