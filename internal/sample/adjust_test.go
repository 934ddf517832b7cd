package sample

import (
	"math"
	"slices"
	"testing"
)

func mustNew(t *testing.T, p Params) *Sampler {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLogitBiasMinus100BansAndPlus100ForcesAToken(t *testing.T) {
	logits := []float32{0, 5, 1, 2}
	if got := mustNew(t, Params{LogitBias: map[int32]float32{1: -100}}).Sample(logits); got != 3 {
		t.Errorf("banned top token: got %d, want 3", got)
	}
	if got := mustNew(t, Params{LogitBias: map[int32]float32{0: 100}}).Sample(logits); got != 0 {
		t.Errorf("forced token: got %d, want 0", got)
	}
	if logits[1] != 5 || logits[0] != 0 {
		t.Errorf("Sample modified the caller's logits: %v", logits)
	}
}

func TestPresenceAndFrequencyPenaltiesDiscourageRepeats(t *testing.T) {
	logits := []float32{3, 2.5, 0}
	// Greedy without a penalty repeats token 0 forever.
	plain := mustNew(t, Params{})
	pres := mustNew(t, Params{PresencePenalty: 1})
	freq := mustNew(t, Params{FrequencyPenalty: 0.3})
	var a, b, c []int32
	for range 4 {
		a = append(a, plain.Sample(logits))
		b = append(b, pres.Sample(logits))
		c = append(c, freq.Sample(logits))
	}
	if !slices.Equal(a, []int32{0, 0, 0, 0}) {
		t.Errorf("plain %v", a)
	}
	// Presence: once both 0 and 1 have appeared they are penalised equally.
	if !slices.Equal(b, []int32{0, 1, 0, 0}) {
		t.Errorf("presence %v, want [0 1 0 0]", b)
	}
	// Frequency 0.3 per occurrence: 3-0.3n vs 2.5-0.3m.
	if !slices.Equal(c, []int32{0, 0, 1, 0}) {
		t.Errorf("frequency %v, want [0 0 1 0]", c)
	}
}

func TestRepetitionPenaltyCoversThePromptAndDividesPositiveLogits(t *testing.T) {
	logits := []float32{3, 2, -1}
	s := mustNew(t, Params{RepetitionPenalty: 2, Prompt: []int32{0}})
	if got := s.Sample(logits); got != 1 { // 3/2 = 1.5 < 2
		t.Fatalf("got %d, want 1", got)
	}
	if got := s.Sample(logits); got != 0 { // 1.5 vs 2/2 = 1
		t.Fatalf("got %d, want 0", got)
	}
}

func TestMinTokensSuppressesStopTokensUntilReached(t *testing.T) {
	logits := []float32{1, 9, 2} // 1 is the end-of-generation token
	s := mustNew(t, Params{MinTokens: 2, Suppress: []int32{1}})
	got := []int32{s.Sample(logits), s.Sample(logits), s.Sample(logits)}
	if !slices.Equal(got, []int32{2, 2, 1}) {
		t.Fatalf("got %v, want [2 2 1]", got)
	}
}

// Adjustments depend only on the sampler's own history, so two samplers
// fed the same logits agree however their calls interleave (DESIGN I8).
func TestAdjustedSamplingIsDeterministicPerSequence(t *testing.T) {
	p := Params{Temperature: 0.8, Seed: 7, PresencePenalty: 0.5, FrequencyPenalty: 0.2, RepetitionPenalty: 1.2,
		LogitBias: map[int32]float32{3: 2}, Prompt: []int32{1, 2}}
	logits := make([]float32, 50)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	x, y, other := mustNew(t, p), mustNew(t, p), mustNew(t, Params{Temperature: 1, Seed: 9})
	var xs, ys []int32
	for range 30 {
		xs = append(xs, x.Sample(logits))
		other.Sample(logits)
	}
	for range 30 {
		ys = append(ys, y.Sample(logits))
	}
	if !slices.Equal(xs, ys) {
		t.Fatalf("%v != %v", xs, ys)
	}
}
