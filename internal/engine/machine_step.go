package engine

import (
	"fmt"
	"slices"

	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// plan asks the scheduler for the next batch and puts it in the Ready. A
// plan with nothing to run is completed at once; when it still made
// progress (a cached prefill handed off, a request aborted) the scheduler
// is asked again, since room or the queue head changed.
func (m *Machine) plan() {
	for m.sched.Running()+m.sched.Waiting() > 0 {
		plan, err := m.sched.Step()
		if err != nil {
			m.failAll(fmt.Errorf("%w: scheduler: %v", ErrInternal, err))
			continue
		}
		m.preemptions += uint64(len(plan.Evicted))
		for _, a := range plan.Aborted {
			m.end(a.ID, Event{Err: fmt.Errorf("%w: %v", ErrInternal, a.Err)})
		}
		for _, u := range plan.Handoffs {
			m.deliver(u, Event{})
		}
		if len(plan.Items) > 0 {
			m.inflight = plan
			if err := m.fillBatch(plan); err != nil {
				m.stepResult(&StepResultMsg{Err: err}) // never run: end the batch's requests
				continue
			}
			m.rd.Batch = &m.batch
			return
		}
		if _, err := m.sched.Complete(nil); err != nil {
			m.failAll(fmt.Errorf("%w: scheduler: %v", ErrInternal, err))
			continue
		}
		if len(plan.Aborted) == 0 && len(plan.Handoffs) == 0 {
			return // every waiting request needs pages that are not there yet
		}
	}
}

// fillBatch turns plan into the batch and pins the handoffs it completes.
// A sequence runs only on pages the ownership check passed for exactly its
// positions (kvcache.StepPages, which only the pool constructs); an item
// without them fails the whole batch before anything runs.
func (m *Machine) fillBatch(plan *sched.Plan) error {
	b := &m.batch
	b.Seqs, b.IDs, b.Pinned = b.Seqs[:0], b.IDs[:0], b.Pinned[:0]
	for _, it := range plan.Items {
		if !it.Verified.Covers(it.Pos, len(it.Tokens)) {
			return fmt.Errorf("request %d: pages for positions [%d, %d) not verified by the ownership check", it.ID, it.Pos, it.Pos+len(it.Tokens))
		}
		seq := model.Seq{Tokens: it.Tokens, Pos: it.Pos, Pages: it.Verified.Pages()}
		if j := m.jobs[it.ID]; j != nil && j.req.PromptLogprobs && it.Pos+len(it.Tokens) <= len(j.req.Prompt) {
			seq.AllLogits = true // a prompt chunk: every position is scored
		}
		b.Seqs = append(b.Seqs, seq)
		b.IDs = append(b.IDs, it.ID)
	}
	if !m.layered {
		return nil
	}
	// A prefill-only request whose last prompt chunk is in this batch gets
	// its pages leased now and handed to its Prefill caller, so the
	// transfer streams each layer as the pass finishes it.
	for _, it := range plan.Items {
		j := m.jobs[it.ID]
		if j == nil || !j.adm.Request().PrefillOnly || it.Pos+len(it.Tokens) != len(j.req.Prompt)-1 {
			continue
		}
		h, err := m.sched.PinHandoff(it.ID)
		if err != nil {
			continue // handed off after the step instead
		}
		j.pinned = true
		m.rd.Events = append(m.rd.Events, Delivery{ID: j.id, Event: Event{handoff: h}, Pinned: true})
		b.Pinned = append(b.Pinned, j.id)
	}
	return nil
}

// stepResult samples from the batch's logits, completes the step in the
// scheduler and turns its updates into events (transition of
// StepResultMsg). A failed pass ends every request in the batch.
func (m *Machine) stepResult(msg *StepResultMsg) {
	plan := m.inflight
	if plan == nil {
		return // no batch out (dropped at close)
	}
	m.inflight = nil
	m.sampled = slices.Grow(m.sampled[:0], len(plan.Items))[:len(plan.Items)]
	clear(m.sampled)
	switch {
	case msg.Err != nil:
		for _, it := range plan.Items {
			_ = m.sched.Cancel(it.ID)
			m.end(it.ID, Event{Err: fmt.Errorf("%w: forward pass: %v", ErrInternal, msg.Err)})
		}
	case len(msg.Logits) != len(plan.Items):
		for _, it := range plan.Items {
			_ = m.sched.Cancel(it.ID)
			m.end(it.ID, Event{Err: fmt.Errorf("%w: forward pass gave %d rows of logits for %d sequences", ErrInternal, len(msg.Logits), len(plan.Items))})
		}
	default:
		for i, it := range plan.Items {
			j := m.jobs[it.ID]
			if j == nil {
				continue
			}
			logits := msg.Logits[i]
			if m.batch.Seqs[i].AllLogits {
				logits = j.scorePrompt(it.Pos, logits, len(it.Tokens))
			}
			if !it.Sample {
				continue
			}
			ev := sampleToken(j, logits)
			if j.req.PromptLogprobs {
				ev.Prompt, j.prompt = j.prompt, nil
			}
			m.sampled[i] = ev.Token
			m.pending[it.ID] = ev
		}
	}
	updates, err := m.sched.Complete(m.sampled)
	if err != nil {
		clear(m.pending)
		m.failAll(fmt.Errorf("%w: scheduler: %v", ErrInternal, err))
		return
	}
	for _, u := range updates {
		ev := m.pending[u.ID]
		delete(m.pending, u.ID)
		m.deliver(u, ev)
	}
	clear(m.pending)
}

// scorePrompt records the scores of the prompt tokens that follow the
// chunk's positions [pos, pos+n), from their rows of logits (AllLogits),
// and returns the last row, the one a sample is drawn from. Recomputing a
// chunk after preemption writes the same scores again.
func (j *job) scorePrompt(pos int, logits []float32, n int) []float32 {
	v := len(logits) / n
	if j.prompt == nil {
		j.prompt = make([]PromptLogprob, len(j.req.Prompt))
	}
	for r := range n {
		next := pos + r + 1
		if next >= len(j.req.Prompt) {
			break
		}
		row := logits[r*v : (r+1)*v]
		tok := j.req.Prompt[next]
		pl := PromptLogprob{Logprob: float32(sample.LogSoftmax(row, tok))}
		for _, c := range sample.TopLogprobs(row, j.req.TopLogprobs) {
			pl.Top = append(pl.Top, TokenLogprob{Token: c.ID, Logprob: float32(c.Logprob)})
		}
		j.prompt[next] = pl
	}
	return logits[(n-1)*v:]
}

// sampleToken draws j's next token from logits and its log-probabilities.
func sampleToken(j *job, logits []float32) Event {
	tok := j.sampler.Sample(logits)
	ev := Event{Token: tok}
	if j.req.Logprobs {
		ev.Logprob = float32(sample.LogSoftmax(logits, tok))
		if j.req.TopLogprobs > 0 {
			for _, c := range sample.TopLogprobs(logits, j.req.TopLogprobs) {
				ev.TopLogprobs = append(ev.TopLogprobs, TokenLogprob{Token: c.ID, Logprob: float32(c.Logprob)})
			}
		}
	}
	return ev
}

// deliver turns a scheduler update into events.
func (m *Machine) deliver(u sched.Update, ev Event) {
	j := m.jobs[u.ID]
	if j == nil {
		if u.Handoff != nil { // its request ended meanwhile: nobody reads the pages
			_ = m.sched.HandoffDone(u.ID, ErrAborted)
		}
		return
	}
	if u.Err != nil {
		m.end(u.ID, Event{Err: fmt.Errorf("%w: %v", ErrInternal, u.Err)})
		return
	}
	if u.Handoff != nil {
		m.handOff(j, u.Handoff)
		return
	}
	if u.HasToken {
		ev.Token = u.Token
		j.n++
		m.emit(u.ID, ev)
	}
	if u.State == sched.StateFinished {
		reason := FinishLength
		if u.HasToken && slices.Contains(j.stopSet, u.Token) {
			reason = FinishStop
		}
		m.end(u.ID, Event{Finish: &Finish{Reason: reason, Usage: Usage{PromptTokens: len(j.req.Prompt), CompletionTokens: j.n, CachedTokens: u.Cached}}})
	}
}
