package sched

import "github.com/bulkhead-llm/bulkhead/internal/kvcache"

// Item is one sequence's share of a step: the fields of a model.Seq plus
// what the engine must do with the result.
type Item struct {
	ID     uint64
	Tokens []int32 // tokens to run, at positions Pos, Pos+1, ...
	Pos    int
	Pages  []int32 // verified physical pages for positions [0, Pos+len(Tokens))
	// Verified is Pages as the ownership check made them: the engine runs
	// only pages that carry it.
	Verified kvcache.StepPages
	// Tokens and Pages stay valid until the next Step.
	// Sample is set when Tokens ends the sequence's known tokens, so the
	// engine samples the next token from the last logits.
	Sample bool
}

// Abort reports a request the scheduler aborted while planning.
type Abort struct {
	ID  uint64
	Err error
}

// Plan is one forward step. The engine turns Items into one model.Forward
// call, then calls Complete. The scheduler reuses it: a Plan and its slices
// are valid until the next Step.
type Plan struct {
	Items   []Item
	Aborted []Abort  // aborted (ownership check failed): report an internal error
	Evicted []uint64 // preempted this step; they recompute later, output unchanged
	// Handoffs are prefill-only requests whose whole target was already in
	// the prefix cache: nothing to compute, handed off while planning.
	Handoffs []Update

	seqs []*seq // aligned with Items: who each item was planned for
}

// reset empties p for the next step, keeping its buffers; the entries are
// zeroed so the old step's sequences and errors are not kept alive.
func (p *Plan) reset() {
	clear(p.Items)
	clear(p.Aborted)
	clear(p.Handoffs)
	clear(p.seqs)
	p.Items, p.Aborted, p.Evicted, p.Handoffs, p.seqs = p.Items[:0], p.Aborted[:0], p.Evicted[:0], p.Handoffs[:0], p.seqs[:0]
}

// Tokens is the number of tokens the step runs.
func (p *Plan) Tokens() int {
	n := 0
	for _, it := range p.Items {
		n += len(it.Tokens)
	}
	return n
}

// Update is what Complete tells the engine about one request.
type Update struct {
	ID       uint64
	Token    int32 // the sampled token, when HasToken
	HasToken bool
	State    State // the request's state afterwards
	Err      error // set when the request was aborted
	// Cached is how many prompt tokens the prefix cache supplied when the
	// request first started (usage's cached_tokens).
	Cached int
	// Handoff is set when a prefill-only request finished its prompt: the
	// caller streams those pages to decode, then calls HandoffDone.
	Handoff *Handoff
}
