package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestGreedyBreaksTiesTowardsLowestID(t *testing.T) {
	cases := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"single_max", []float32{0, 3, 1}, 1},
		{"tie_picks_lower_id", []float32{1, 5, 2, 5, 5}, 1},
		{"all_equal", []float32{2, 2, 2}, 0},
		{"nan_is_skipped", []float32{float32(math.NaN()), 1, 0}, 1},
		{"negative_infinities", []float32{float32(math.Inf(-1)), -3, float32(math.Inf(-1))}, 1},
		{"negative_after_nan", []float32{float32(math.NaN()), -2, -1, -1}, 2},
		{"all_nan", []float32{float32(math.NaN()), float32(math.NaN())}, 0},
		{"empty", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Greedy(tc.logits); got != tc.want {
				t.Errorf("Greedy(%v) = %d, want %d", tc.logits, got, tc.want)
			}
		})
	}
}

// TestGreedyIsTheLowestIDOfTheMaximum checks Greedy against its definition
// on random logits with repeats, NaNs and infinities.
func TestGreedyIsTheLowestIDOfTheMaximum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pick := []float32{-1, 0, 1, 2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -0.5}
		logits := rapid.SliceOfN(rapid.SampledFrom(pick), 0, 40).Draw(t, "logits")
		want := int32(0)
		found := false
		for i, v := range logits {
			if math.IsNaN(float64(v)) {
				continue
			}
			if !found || v > logits[want] {
				want, found = int32(i), true
			}
		}
		if got := Greedy(logits); got != want {
			t.Fatalf("Greedy(%v) = %d, want %d", logits, got, want)
		}
	})
}

func TestZeroTemperatureIsGreedy(t *testing.T) {
	s, err := New(Params{Temperature: 0, TopK: 5, TopP: 0.5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if got := s.Sample([]float32{0.1, 0.7, 0.7, 0.2}); got != 1 {
			t.Fatalf("sample %d: got %d, want 1", i, got)
		}
	}
}

func TestSeedReproducesTheSameTokens(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	draw := func(seed uint64) []int32 {
		s, _ := New(Params{Temperature: 1, Seed: seed})
		out := make([]int32, 50)
		for i := range out {
			out[i] = s.Sample(logits)
		}
		return out
	}
	if a, b := draw(42), draw(42); !slices.Equal(a, b) {
		t.Errorf("same seed, different tokens:\n%v\n%v", a, b)
	}
	if a, b := draw(42), draw(43); slices.Equal(a, b) {
		t.Errorf("seeds 42 and 43 drew the same 50 tokens %v", a)
	}
}

// TestSamplingFollowsSoftmax draws many tokens at temperature 2 and checks
// each frequency against softmax(logits/2) within five standard errors.
func TestSamplingFollowsSoftmax(t *testing.T) {
	logits := []float32{1, 2, 0, 3}
	const T, n = 2.0, 40000
	s, _ := New(Params{Temperature: T, Seed: 7})
	counts := make([]int, len(logits))
	for i := 0; i < n; i++ {
		counts[s.Sample(logits)]++
	}
	sum := 0.0
	for _, l := range logits {
		sum += math.Exp(float64(l) / T)
	}
	for i, l := range logits {
		p := math.Exp(float64(l)/T) / sum
		se := math.Sqrt(p * (1 - p) / n)
		if got := float64(counts[i]) / n; math.Abs(got-p) > 5*se {
			t.Errorf("token %d: frequency %.4f, softmax %.4f", i, got, p)
		}
	}
}

// TestFiltersKeepOnlyAllowedTokens is a property: whatever the logits and
// settings, a sampled token survives top-k, top-p and min-p as defined on
// softmax(logits/T).
func TestFiltersKeepOnlyAllowedTokens(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(rt, "n")
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rapid.IntRange(-20, 20).Draw(rt, "logit")) / 4
		}
		p := Params{
			Temperature: rapid.Float64Range(0.1, 3).Draw(rt, "T"),
			TopK:        rapid.IntRange(0, n+2).Draw(rt, "k"),
			TopP:        rapid.Float64Range(0, 1).Draw(rt, "p"),
			MinP:        rapid.Float64Range(0, 1).Draw(rt, "minp"),
			Seed:        rapid.Uint64().Draw(rt, "seed"),
		}
		s, err := New(p)
		if err != nil {
			rt.Fatal(err)
		}
		// Rank tokens: most probable first, lower id first among equals.
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			if logits[a] != logits[b] {
				if logits[a] > logits[b] {
					return -1
				}
				return 1
			}
			return a - b
		})
		probs := make([]float64, n)
		sum := 0.0
		for i, l := range logits {
			probs[i] = math.Exp(float64(l) / p.Temperature)
			sum += probs[i]
		}
		for i := 0; i < 20; i++ {
			id := int(s.Sample(logits))
			rank := slices.Index(order, id)
			if p.TopK > 0 && rank >= p.TopK {
				rt.Fatalf("token %d has rank %d beyond top-k %d", id, rank, p.TopK)
			}
			if p.TopP > 0 && p.TopP < 1 {
				before := 0.0
				for _, o := range order[:rank] {
					before += probs[o] / sum
				}
				if before >= p.TopP+1e-9 {
					rt.Fatalf("token %d: mass %.4f above it already reaches top-p %.4f", id, before, p.TopP)
				}
			}
			if probs[id] < p.MinP*probs[order[0]]*(1-1e-9) {
				rt.Fatalf("token %d: probability below min-p %.3f of the top", id, p.MinP)
			}
		}
	})
}

func TestParamsRejectOutOfRange(t *testing.T) {
	for _, p := range []Params{{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {MinP: -0.1}, {Temperature: math.NaN()}} {
		if _, err := New(p); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
}

// referenceSample is the filters' definition applied literally: sort every
// token, cut to top-k, to the top-p prefix, to min-p, then draw by inverse
// CDF over the survivors in id order.
func referenceSample(logits []float32, p Params, r float64) int32 {
	top := math.Inf(-1)
	for _, v := range logits {
		top = math.Max(top, float64(v))
	}
	type cand struct {
		id int32
		p  float64
	}
	var all []cand
	total := 0.0
	for i, v := range logits {
		pr := math.Exp((float64(v) - top) * (1 / p.Temperature))
		all = append(all, cand{int32(i), pr})
		total += pr
	}
	slices.SortStableFunc(all, func(a, b cand) int {
		if a.p > b.p {
			return -1
		}
		if a.p < b.p {
			return 1
		}
		return 0
	})
	if p.TopK > 0 && p.TopK < len(all) {
		all = all[:p.TopK]
	}
	if p.TopP > 0 && p.TopP < 1 {
		mass := 0.0
		for i := range all {
			mass += all[i].p / total
			if mass >= p.TopP {
				all = all[:i+1]
				break
			}
		}
	}
	n := 1
	for n < len(all) && all[n].p >= p.MinP {
		n++
	}
	all = all[:n]
	slices.SortFunc(all, func(a, b cand) int { return int(a.id - b.id) })
	sum := 0.0
	for _, c := range all {
		sum += c.p
	}
	r *= sum
	for _, c := range all {
		r -= c.p
		if r < 0 {
			return c.id
		}
	}
	return all[len(all)-1].id
}

// TestSampleMatchesReferenceDefinition is a property: the sampler, which
// sorts only candidates that can survive, draws exactly the token the
// literal definition draws from the same random number.
func TestSampleMatchesReferenceDefinition(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 3000).Draw(rt, "n")
		logits := make([]float32, n)
		spread := rapid.Float64Range(0.1, 40).Draw(rt, "spread")
		seed := rapid.Uint64().Draw(rt, "seed")
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range logits {
			logits[i] = float32(math.Round(rng.NormFloat64()*spread*8) / 8)
		}
		p := Params{
			Temperature: rapid.Float64Range(0.05, 2).Draw(rt, "T"),
			TopK:        rapid.SampledFrom([]int{0, 0, 1, 5, 40, 5000}).Draw(rt, "k"),
			TopP:        rapid.SampledFrom([]float64{0, 0.5, 0.9, 0.95, 0.999, 1}).Draw(rt, "p"),
			MinP:        rapid.SampledFrom([]float64{0, 0, 0.01, 0.05, 0.5}).Draw(rt, "minp"),
			Seed:        seed,
		}
		s, _ := New(p)
		twin := rand.New(rand.NewPCG(p.Seed, 0x73616d706c65))
		for i := 0; i < 5; i++ {
			got := s.Sample(logits)
			want := referenceSample(logits, p, twin.Float64())
			if p.TopK == 1 {
				want = Greedy(logits)
				twin = rand.New(rand.NewPCG(p.Seed, 0x73616d706c65)) // greedy draws nothing
			}
			if got != want {
				rt.Fatalf("draw %d: sampler %d, definition %d", i, got, want)
			}
		}
	})
}
