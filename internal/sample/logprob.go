package sample

import (
	"cmp"
	"math"
	"slices"
)

// TokenLogprob is one token's log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float64
}

// LogSoftmax returns log(softmax(logits)) at id, computed in float64 over
// the raw logits (before temperature or any filter), as OpenAI's and
// llama.cpp's logprobs are.
func LogSoftmax(logits []float32, id int32) float64 {
	return float64(logits[id]) - logSumExp(logits)
}

func logSumExp(logits []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = max(mx, float64(v))
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(sum)
}

// TopLogprobs returns the n most probable tokens with their
// log-probabilities, most probable first, lower id first among equals.
func TopLogprobs(logits []float32, n int) []TokenLogprob {
	n = min(n, len(logits))
	if n <= 0 {
		return nil
	}
	lse := logSumExp(logits)
	better := func(a, b int32) bool {
		return logits[a] > logits[b] || (logits[a] == logits[b] && a < b)
	}
	// Keep the best n ids in a small sorted slice: n is small (≤ 20).
	top := make([]int32, 0, n+1)
	for i := range logits {
		id := int32(i)
		if logits[i] != logits[i] {
			continue
		}
		if len(top) == n && !better(id, top[n-1]) {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, id, func(e, t int32) int {
			if better(e, t) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, at, id)
		if len(top) > n {
			top = top[:n]
		}
	}
	out := make([]TokenLogprob, len(top))
	for i, id := range top {
		out[i] = TokenLogprob{ID: id, Logprob: float64(logits[id]) - lse}
	}
	slices.SortStableFunc(out, func(a, b TokenLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
	return out
}
