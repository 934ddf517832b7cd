package copymodel

import (
	"slices"
	"testing"
)

// staleSetup prefills another tenant's prompt of length tokens (filler,
// key, canary, filler; no final key) into the first pages of a fresh store.
// It returns the store's page count, the prompt, its canary (which lies
// outside the prompt's last page, so a victim writing there cannot clobber
// it) and a function decoding 8 tokens greedily for a sequence over that
// store.
func staleSetup(t *testing.T, r *runtime, length int, seed uint64) (kvPages int, prompt, canary []int32, run func(pages []int32, tokens []int32, pos int) generation) {
	t.Helper()
	rng := splitMix(seed)
	words := pickDistinct(&rng, r.words.Canary, 8)
	pos := 1 + int(rng.next()%uint64(length-pageSize-12))
	text, err := Prompt(words, pos, length+1, seed)
	if err != nil {
		t.Fatal(err)
	}
	prompt = r.tok.Encode(text, true, false)
	prompt = prompt[:len(prompt)-1] // drop the final key: the victim brings it
	canary = r.encodeWords(words, false)
	n := pagesFor(length)
	kvPages = n + 2*pagesFor(length+10)
	kv := r.kvFor(t, kvPages)
	if _, err := r.generate(kv, pagesFrom(0, n), prompt, 0, 1); err != nil {
		t.Fatal(err)
	}
	run = func(pages []int32, tokens []int32, pos int) generation {
		g, err := r.generate(kv, pages, tokens, pos, 8)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	return kvPages, prompt, canary, run
}

// TestVictimOnStalePagesEmitsOtherTenantsCanary reproduces the incident: a
// request whose prompt is just the key, but whose page table covers pages
// another request wrote, continues that request's context and emits its
// canary. With its own clean pages the same request emits no canary word.
func TestVictimOnStalePagesEmitsOtherTenantsCanary(t *testing.T) {
	r := load(t, Options{})
	trials := 6
	if shortRun() {
		trials = 2
	}
	key := r.encodeWords([]string{r.words.Key}, false)
	bos := r.tok.BOS()
	canaryIDs := map[int32]bool{}
	for _, id := range r.encodeWords(r.words.Canary, false) {
		canaryIDs[id] = true
	}
	leaked, clean := 0, 0
	for i := 0; i < trials; i++ {
		length := 200 + 37*i
		total, prompt, canary, run := staleSetup(t, r, length, uint64(100+i))
		n := pagesFor(length)
		// The victim's table: the other prompt's pages, then its own for
		// the tokens it writes past them.
		stale := append(pagesFrom(0, n), pagesFrom(n, pagesFor(length+10)-n)...)
		got := run(stale, key, len(prompt))
		if slices.Equal(got.tokens, canary) {
			leaked++
		} else {
			t.Errorf("victim on stale pages emitted %q, want the other tenant's canary %q",
				r.tok.Decode(got.tokens), r.tok.Decode(canary))
		}
		own := pagesFrom(total-pagesFor(10), pagesFor(10))
		got = run(own, []int32{bos, key[0]}, 0)
		// With nothing to copy, the induction head finds the key itself.
		if slices.ContainsFunc(got.tokens, func(id int32) bool { return canaryIDs[id] }) {
			t.Errorf("victim on its own pages emitted canary words: %q", r.tok.Decode(got.tokens))
		} else if slices.ContainsFunc(got.tokens, func(id int32) bool { return id != key[0] }) {
			t.Errorf("victim on its own pages emitted %q, want its key repeated", r.tok.Decode(got.tokens))
		} else {
			clean++
		}
	}
	t.Logf("stale pages: %d/%d emitted the other canary; own pages: %d/%d repeated the key, no canary word", leaked, trials, clean, trials)
}
