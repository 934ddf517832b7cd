package sample

import "math"

// adjuster applies a request's logit adjustments. It keeps the output's
// token counts itself, so penalties depend only on the request's own
// sequence, never on what else is batched with it (DESIGN I8).
type adjuster struct {
	active   bool
	bias     map[int32]float32
	rep      float32
	presence float32
	freq     float32
	minTok   int
	suppress []int32
	prompt   map[int32]bool // tokens of the prompt, for repetition_penalty
	counts   map[int32]int  // generated tokens so far
	drawn    int
	buf      []float32
}

func newAdjuster(p Params) adjuster {
	a := adjuster{bias: p.LogitBias, presence: p.PresencePenalty, freq: p.FrequencyPenalty,
		minTok: p.MinTokens, suppress: p.Suppress, counts: map[int32]int{}}
	if p.RepetitionPenalty != 0 && p.RepetitionPenalty != 1 {
		a.rep = p.RepetitionPenalty
		a.prompt = make(map[int32]bool, len(p.Prompt))
		for _, t := range p.Prompt {
			a.prompt[t] = true
		}
	}
	a.active = len(a.bias) > 0 || a.rep != 0 || a.presence != 0 || a.freq != 0 || (a.minTok > 0 && len(a.suppress) > 0)
	return a
}

// apply returns logits adjusted, in a scratch copy, or logits itself when
// nothing applies.
func (a *adjuster) apply(logits []float32) []float32 {
	if !a.active {
		return logits
	}
	a.buf = append(a.buf[:0], logits...)
	out := a.buf
	n := int32(len(out))
	for id, b := range a.bias {
		if id >= 0 && id < n {
			out[id] += b
		}
	}
	if a.rep != 0 {
		penalise := func(id int32) {
			if id < 0 || id >= n {
				return
			}
			if out[id] > 0 {
				out[id] /= a.rep
			} else {
				out[id] *= a.rep
			}
		}
		for id := range a.prompt {
			penalise(id)
		}
		for id := range a.counts {
			if !a.prompt[id] {
				penalise(id)
			}
		}
	}
	if a.presence != 0 || a.freq != 0 {
		for id, c := range a.counts {
			if id >= 0 && id < n {
				out[id] -= a.presence + a.freq*float32(c)
			}
		}
	}
	if a.drawn < a.minTok {
		for _, id := range a.suppress {
			if id >= 0 && id < n {
				out[id] = float32(math.Inf(-1))
			}
		}
	}
	return out
}

func (a *adjuster) record(tok int32) {
	a.drawn++
	if a.active {
		a.counts[tok]++
	}
}
