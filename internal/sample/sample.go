// Package sample turns logits into the next token: greedy, or random with
// temperature, top-k, top-p and min-p filters, reproducible from a seed,
// and reports log-probabilities.
//
// Filters are applied in this order to the distribution softmax(logits/T):
// top-k keeps the k most probable tokens, top-p the smallest prefix of
// those (most probable first) whose mass reaches p, min-p drops tokens
// whose probability is below min_p × the top token's. The survivors are
// renormalised and one is drawn, by inverse CDF over them in id order,
// with the sampler's own PRNG, so a request with a seed gets the same
// tokens whatever else the server is doing.
// Ties between equal logits always break towards the lower token id.
package sample

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Params are one request's sampling settings.
type Params struct {
	// Temperature divides the logits; 0 means greedy.
	Temperature float64
	// TopK keeps the K most probable tokens; 0 disables it.
	TopK int
	// TopP keeps the smallest most-probable set with mass ≥ TopP; 0 or 1
	// disables it.
	TopP float64
	// MinP drops tokens less probable than MinP × the most probable; 0
	// disables it.
	MinP float64
	// Seed seeds the sampler's PRNG.
	Seed uint64

	// Logit adjustments, applied in this order before the filters (see
	// adjust.go): LogitBias adds to a token's logit; RepetitionPenalty
	// (0 or 1 disables) divides positive and multiplies negative logits
	// of tokens seen in Prompt or the output; PresencePenalty and
	// FrequencyPenalty subtract, for each token generated so far, the
	// penalty once and per occurrence; Suppress bans tokens (the stop set)
	// until MinTokens have been drawn.
	LogitBias         map[int32]float32
	RepetitionPenalty float32
	PresencePenalty   float32
	FrequencyPenalty  float32
	MinTokens         int
	Suppress          []int32
	Prompt            []int32

	// Constraint, when set, masks the adjusted logits (a grammar for
	// structured output) and is told every drawn token.
	Constraint Constraint
}

// Constraint restricts which tokens may be drawn. Mask sets disallowed
// logits to -Inf in place (in the sampler's scratch copy); Accept is called
// with each drawn token.
type Constraint interface {
	Mask(logits []float32)
	Accept(tok int32)
}

// Validate checks the ranges (OpenAI's and llama.cpp's).
func (p Params) Validate() error {
	switch {
	case !(p.Temperature >= 0) || p.Temperature > 100:
		return fmt.Errorf("sample: temperature %g must be in [0, 100]", p.Temperature)
	case p.TopK < 0:
		return fmt.Errorf("sample: top_k %d must be ≥ 0", p.TopK)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return fmt.Errorf("sample: top_p %g must be in [0, 1]", p.TopP)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return fmt.Errorf("sample: min_p %g must be in [0, 1]", p.MinP)
	case !(p.RepetitionPenalty >= 0):
		return fmt.Errorf("sample: repetition_penalty %g must be ≥ 0", p.RepetitionPenalty)
	case p.MinTokens < 0:
		return fmt.Errorf("sample: min_tokens %d must be ≥ 0", p.MinTokens)
	}
	return nil
}

// Sampler draws tokens for one request. It is not safe for concurrent use.
type Sampler struct {
	p    Params
	rng  *rand.Rand
	cand []candidate
	prob []float64 // per-token scratch
	adj  adjuster
	cbuf []float32 // scratch for a constraint when no adjustment copied
}

type candidate struct {
	id int32
	p  float64 // logit/T, then probability
}

// New returns a sampler for p.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x73616d706c65)), adj: newAdjuster(p)}, nil
}

// Greedy returns the id of the largest logit, the lowest id among equals.
// NaN logits are never chosen unless all are NaN (then 0).
func Greedy(logits []float32) int32 {
	// The running maximum stays in a register (no reload of logits[best]
	// per element): a third of the time on a large vocabulary. The first
	// non-NaN value always takes best; later ones only when strictly
	// greater, so ties keep the lowest id and NaN never wins.
	best, top := -1, float32(0)
	for i, v := range logits {
		if v > top || (best < 0 && v == v) {
			best, top = i, v
		}
	}
	return int32(max(best, 0))
}

// Sample picks the next token from logits.
//
// Only the candidates that can survive the filters are sorted: min-p and
// top-p both keep a most-probable prefix, so tokens below min-p's cut, or
// below a cut whose survivors already hold top-p's mass, are dropped before
// sorting. Without filters nothing is sorted.
//
// Logit adjustments (Params.LogitBias and the penalties) are applied to a
// copy first; logits itself is not modified. Every drawn token is recorded
// for the penalties, so one Sampler serves exactly one sequence.
func (s *Sampler) Sample(logits []float32) int32 {
	adj := s.adj.apply(logits)
	if c := s.p.Constraint; c != nil {
		if len(adj) > 0 && &adj[0] == &logits[0] {
			s.cbuf = append(s.cbuf[:0], logits...)
			adj = s.cbuf
		}
		c.Mask(adj)
	}
	tok := s.draw(adj)
	s.adj.record(tok)
	if c := s.p.Constraint; c != nil {
		c.Accept(tok)
	}
	return tok
}

func (s *Sampler) draw(logits []float32) int32 {
	if s.p.Temperature == 0 || s.p.TopK == 1 {
		return Greedy(logits)
	}
	top := math.Inf(-1)
	for _, v := range logits {
		if v == v {
			top = max(top, float64(v))
		}
	}
	if math.IsInf(top, 0) {
		return Greedy(logits)
	}
	invT := 1 / s.p.Temperature
	// Unnormalised probabilities relative to the top token (which gets 1);
	// -1 marks a NaN logit, which is never drawn.
	if cap(s.prob) < len(logits) {
		s.prob = make([]float64, len(logits))
	}
	prob := s.prob[:len(logits)]
	total := 0.0
	for i, v := range logits {
		if v != v {
			prob[i] = -1
			continue
		}
		if math.IsInf(float64(v), -1) { // masked (grammar, min_tokens): exp would give 0 slowly
			prob[i] = 0
			continue
		}
		prob[i] = math.Exp((float64(v) - top) * invT)
		total += prob[i]
	}
	topP := s.p.TopP
	if topP <= 0 || topP >= 1 {
		topP = 1
	}
	if s.p.TopK == 0 && topP == 1 && s.p.MinP == 0 {
		return s.drawInOrder(prob, total)
	}
	// Start from a cut on the relative probability and lower it until the
	// survivors certainly contain the filtered set.
	cut := 1e-3
	if s.p.MinP > 0 {
		cut = s.p.MinP
	}
	var c []candidate
	for {
		var mass float64
		c, mass = s.collect(prob, cut)
		enough := cut == 0 || cut <= s.p.MinP ||
			(s.p.TopK > 0 && len(c) >= s.p.TopK) || (topP < 1 && mass >= topP*total)
		if enough {
			var ok bool
			complete := cut == 0 || (s.p.MinP > 0 && cut <= s.p.MinP)
			if c, ok = s.filter(c, total, topP, complete); ok {
				break
			}
		}
		if cut *= 1e-3; cut < 1e-12 {
			cut = 0
		}
	}
	// Draw by inverse CDF over the survivors in id order, the order
	// drawInOrder uses for the unfiltered distribution.
	slices.SortFunc(c, func(a, b candidate) int { return cmp.Compare(a.id, b.id) })
	sum := 0.0
	for _, x := range c {
		sum += x.p
	}
	r := s.rng.Float64() * sum
	for _, x := range c {
		r -= x.p
		if r < 0 {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// collect gathers the tokens whose probability relative to the top one is
// at least cut, and their mass.
func (s *Sampler) collect(prob []float64, cut float64) ([]candidate, float64) {
	c := s.cand[:0]
	mass := 0.0
	for i, p := range prob {
		if p >= cut && p >= 0 {
			c = append(c, candidate{int32(i), p})
			mass += p
		}
	}
	s.cand = c
	return c, mass
}

// filter sorts c (most probable first, lower id first among equals) and
// applies top-k, top-p and min-p. It reports false when top-p's mass was
// not reached within c, c was not cut to top-k, and c may lack tokens the
// filters keep (complete false: not every token at or above min-p's
// threshold was collected); the caller must then collect more.
func (s *Sampler) filter(c []candidate, total, topP float64, complete bool) ([]candidate, bool) {
	slices.SortFunc(c, func(a, b candidate) int {
		if a.p != b.p {
			return cmp.Compare(b.p, a.p)
		}
		return cmp.Compare(a.id, b.id)
	})
	if s.p.TopK > 0 && s.p.TopK < len(c) {
		c = c[:s.p.TopK]
	}
	if topP < 1 {
		mass, reached := 0.0, false
		for i := range c {
			mass += c[i].p / total
			if mass >= topP {
				c, reached = c[:i+1], true
				break
			}
		}
		if !reached && !complete && !(s.p.TopK > 0 && len(c) == s.p.TopK) {
			return nil, false
		}
	}
	// The top token has relative probability 1: min-p's threshold is MinP.
	n := 1
	for n < len(c) && c[n].p >= s.p.MinP {
		n++
	}
	return c[:n], true
}

// drawInOrder samples from the whole distribution, walking ids in order.
func (s *Sampler) drawInOrder(prob []float64, total float64) int32 {
	r := s.rng.Float64() * total
	last := int32(0)
	for i, p := range prob {
		if p < 0 {
			continue
		}
		last = int32(i)
		r -= p
		if r < 0 {
			return last
		}
	}
	return last
}
