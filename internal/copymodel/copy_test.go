package copymodel

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// Test sizes: BULKHEAD_SHORT=1 (the -race pass) runs fewer, BULKHEAD_LONG=1
// (outside -short) runs the exhaustive sweep.
func longRun() bool  { return !testing.Short() && os.Getenv("BULKHEAD_LONG") == "1" }
func shortRun() bool { return testing.Short() || os.Getenv("BULKHEAD_SHORT") == "1" }

// copyStats accumulates trials of exact canary copy.
type copyStats struct {
	trials, exact int
	minMargin     float32
}

func (s *copyStats) add(t *testing.T, r *runtime, what string, got generation, want []int32) {
	t.Helper()
	s.trials++
	if s.trials == 1 || got.minMargin < s.minMargin {
		s.minMargin = got.minMargin
	}
	if slices.Equal(got.tokens, want) {
		s.exact++
		return
	}
	t.Errorf("%s: emitted %q, want the canary %q", what, r.tok.Decode(got.tokens), r.tok.Decode(want))
}

// pickDistinct draws n distinct words from pool.
func pickDistinct(rng *splitMix, pool []string, n int) []string {
	idx := make([]int, len(pool))
	for i := range idx {
		idx[i] = i
	}
	out := make([]string, n)
	for i := range out {
		j := i + int(rng.next()%uint64(len(idx)-i))
		idx[i], idx[j] = idx[j], idx[i]
		out[i] = pool[idx[i]]
	}
	return out
}

// auditTrial runs one prompt exactly as the audit builds it: filler, the
// key and 8 canary words at token position pos, filler, the key; greedy
// decoding must emit the canary.
func auditTrial(t *testing.T, r *runtime, s *copyStats, length, pos int, seed uint64) {
	t.Helper()
	rng := splitMix(seed)
	canary := pickDistinct(&rng, r.words.Canary, 8)
	text, err := Prompt(canary, pos, length, seed)
	if err != nil {
		t.Fatal(err)
	}
	ids := r.tok.Encode(text, true, false)
	if len(ids) != length {
		t.Fatalf("prompt of %d tokens, want %d", len(ids), length)
	}
	n := pagesFor(length + 8)
	got, err := r.generate(r.kvFor(t, n), pagesFrom(0, n), ids, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	s.add(t, r, "audit prompt", got, r.encodeWords(canary, false))
}

// TestCopiesCanaryFromAuditPrompt runs audit-shaped prompts, canary at the
// start, middle and end, up to the model's maximum context.
func TestCopiesCanaryFromAuditPrompt(t *testing.T) {
	r := load(t, Options{})
	var s copyStats
	lengths := []int{512, DefaultContext}
	if shortRun() {
		lengths = []int{512}
	}
	for _, length := range lengths {
		for i, pos := range []int{1, length / 2, length - 10} {
			auditTrial(t, r, &s, length, pos, uint64(length*10+i))
		}
	}
	t.Logf("audit prompts: %d/%d exact, smallest top-1 margin %.1f logits", s.exact, s.trials, s.minMargin)
}

// TestCopiesEveryCanaryOfManyBlocks prefills one prompt holding many
// (key, 8 canary words) blocks spread from its start to its end, then forks
// a continuation per block that appends the block's key: each must emit its
// own block's canary, with all the other blocks as distractors. The prefix
// pages are shared by the forks (each fork writes only to its own pages), so
// hundreds of trials cost a few prefills.
func TestCopiesEveryCanaryOfManyBlocks(t *testing.T) {
	prompts, length := 20, 512
	if shortRun() {
		prompts = 1
	}
	r := load(t, Options{})
	s := manyBlockTrials(t, r, prompts, length, 10, 1)
	t.Logf("vocab %d, %d-token prompts with 10 blocks: %d/%d exact, smallest top-1 margin %.1f logits",
		DefaultVocab, length, s.exact, s.trials, s.minMargin)
	if s.trials < 10*prompts {
		t.Fatalf("%d trials, want %d", s.trials, 10*prompts)
	}
}

// manyBlockTrials runs prompts prompts of length tokens (a multiple of the
// page size), each with blocks canary blocks.
func manyBlockTrials(t *testing.T, r *runtime, prompts, length, blocks int, seed uint64) copyStats {
	t.Helper()
	var s copyStats
	words := r.words
	prefixPages := pagesFor(length)
	forkPages := pagesFor(9)
	for p := 0; p < prompts; p++ {
		rng := splitMix(seed*1000 + uint64(p))
		// Keys and canaries are all distinct canary words; block b starts at
		// an evenly spread position, jittered, the first right after BOS.
		uniq := pickDistinct(&rng, words.Canary, 9*blocks)
		ws := make([]string, length-1)
		for i := range ws {
			ws[i] = words.Filler[rng.next()%uint64(len(words.Filler))]
		}
		span := (length - 1) / blocks
		starts := make([]int, blocks)
		for b := range starts {
			starts[b] = b * span
			if b > 0 {
				starts[b] += int(rng.next() % uint64(span-9))
			}
			copy(ws[starts[b]:], uniq[9*b:9*b+9])
		}
		ids := r.encodeWords(ws, true)
		if len(ids) != length {
			t.Fatalf("prompt of %d tokens, want %d", len(ids), length)
		}
		kv := r.kvFor(t, prefixPages+blocks*forkPages)
		if _, err := r.model.Forward(kv, []model.Seq{{Tokens: ids, Pos: 0, Pages: pagesFrom(0, prefixPages)}}); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < blocks; b++ {
			pages := append(pagesFrom(0, prefixPages), pagesFrom(prefixPages+b*forkPages, forkPages)...)
			key := r.encodeWords(uniq[9*b:9*b+1], false)
			got, err := r.generate(kv, pages, key, length, 8)
			if err != nil {
				t.Fatal(err)
			}
			s.add(t, r, "block at "+strconv.Itoa(starts[b]+1), got, r.encodeWords(uniq[9*b+1:9*b+9], false))
		}
	}
	return s
}
