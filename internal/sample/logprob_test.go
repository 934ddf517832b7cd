package sample

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestLogSoftmaxIsANormalisedLogDistribution(t *testing.T) {
	logits := []float32{1000, 1001, 999, -5}
	total := 0.0
	for i := range logits {
		lp := LogSoftmax(logits, int32(i))
		if lp > 0 || math.IsNaN(lp) {
			t.Fatalf("logprob %d = %v", i, lp)
		}
		total += math.Exp(lp)
	}
	if math.Abs(total-1) > 1e-12 {
		t.Errorf("probabilities sum to %v", total)
	}
	if got, want := LogSoftmax(logits, 1)-LogSoftmax(logits, 0), 1.0; math.Abs(got-want) > 1e-12 {
		t.Errorf("logprob difference %v, want the logit difference %v", got, want)
	}
}

// TestTopLogprobsAgreesWithFullSort is a property: the top-n list equals
// the first n of all tokens sorted by logit (then id), with LogSoftmax's
// values.
func TestTopLogprobsAgreesWithFullSort(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		logits := make([]float32, rapid.IntRange(1, 60).Draw(rt, "len"))
		for i := range logits {
			logits[i] = float32(rapid.IntRange(-8, 8).Draw(rt, "l"))
		}
		n := rapid.IntRange(0, 70).Draw(rt, "n")
		ids := make([]int32, len(logits))
		for i := range ids {
			ids[i] = int32(i)
		}
		slices.SortStableFunc(ids, func(a, b int32) int {
			if logits[a] > logits[b] {
				return -1
			}
			if logits[a] < logits[b] {
				return 1
			}
			return int(a - b)
		})
		got := TopLogprobs(logits, n)
		if want := min(n, len(logits)); len(got) != want {
			rt.Fatalf("%d entries, want %d", len(got), want)
		}
		for i, g := range got {
			if g.ID != ids[i] || g.Logprob != LogSoftmax(logits, g.ID) {
				rt.Fatalf("entry %d = %+v, want id %d logprob %v", i, g, ids[i], LogSoftmax(logits, ids[i]))
			}
		}
	})
}
