// Package apitest provides a fake engine and a fake tokenizer that satisfy
// api.Engine and api.Tokenizer, for tests of the API server and of clients
// such as the load generator. The fake engine echoes the prompt back, so a
// response shows exactly what the server submitted.
package apitest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// Special tokens of ByteTokenizer.
const (
	BOS = 1
	EOS = 2
)

// ByteTokenizer is a fake tokenizer: token 1 is <s>, 2 is </s>, and byte b
// is token b+3, so multi-byte characters span several tokens.
type ByteTokenizer struct{ Template string }

// Encode tokenizes text byte by byte, recognising <s> and </s> when parseSpecial.
func (t ByteTokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	var ids []int32
	if addSpecial {
		ids = append(ids, BOS)
	}
	for len(text) > 0 {
		if parseSpecial && strings.HasPrefix(text, "<s>") {
			ids, text = append(ids, BOS), text[3:]
			continue
		}
		if parseSpecial && strings.HasPrefix(text, "</s>") {
			ids, text = append(ids, EOS), text[4:]
			continue
		}
		ids, text = append(ids, int32(text[0])+3), text[1:]
	}
	return ids
}

// Decode joins the bytes of byte tokens; special tokens decode to nothing.
func (t ByteTokenizer) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		if id >= 3 && id < 259 {
			b = append(b, byte(id-3))
		}
	}
	return string(b)
}

// Piece returns a token's bytes.
func (t ByteTokenizer) Piece(id int32) []byte {
	switch {
	case id == BOS:
		return []byte("<s>")
	case id == EOS:
		return []byte("</s>")
	case id >= 3 && id < 259:
		return []byte{byte(id - 3)}
	}
	return nil
}

// TokenText is the vocabulary spelling: the same as Piece here.
func (t ByteTokenizer) TokenText(id int32) string { return string(t.Piece(id)) }

func (t ByteTokenizer) IsEOG(id int32) bool  { return id == EOS }
func (t ByteTokenizer) ChatTemplate() string { return t.Template }
func (t ByteTokenizer) BOS() int32           { return BOS }
func (t ByteTokenizer) EOS() int32           { return EOS }
func (t ByteTokenizer) VocabSize() int       { return 259 }

// FakeEngine echoes the prompt's tokens back (BOS dropped), one event per
// token, then finishes with "length" at MaxTokens, or sends EOS and
// finishes with "stop" when the prompt runs out. Its knobs are atomic so
// tests may turn them while requests run.
type FakeEngine struct {
	MaxCtx    atomic.Int64
	FailAfter atomic.Int64 // > 0: an ErrInternal event after this many tokens
	Block     atomic.Bool  // after the first token, wait for cancellation
	DelayNS   atomic.Int64 // pause before each token
	NotReady  atomic.Bool
	reject    atomic.Value // error

	mu        sync.Mutex
	requests  []engine.Request
	cancelled int
	// Started receives one value as each stream begins, Done as each ends
	// (up to 1024 unread).
	Started chan struct{}
	Done    chan struct{}
}

// NewFakeEngine returns a fake engine with a 256-token context.
func NewFakeEngine() *FakeEngine {
	e := &FakeEngine{Started: make(chan struct{}, 1024), Done: make(chan struct{}, 1024)}
	e.MaxCtx.Store(256)
	return e
}

// RejectWith makes Submit fail with err (nil: admit again).
func (e *FakeEngine) RejectWith(err error) { e.reject.Store(&err) }

func (e *FakeEngine) MaxContext() int { return int(e.MaxCtx.Load()) }
func (e *FakeEngine) Ready() bool     { return !e.NotReady.Load() }

// Stats reports fixed page counts and the number of requests submitted.
func (e *FakeEngine) Stats() engine.Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return engine.Stats{PagesTotal: 100, PagesFree: 90, PagesCached: 4, Running: len(e.requests), Preemptions: 3}
}

// Submit admits the request unless told to reject or the prompt is too long.
func (e *FakeEngine) Submit(ctx context.Context, req engine.Request) (<-chan engine.Event, error) {
	if p, ok := e.reject.Load().(*error); ok && *p != nil {
		return nil, *p
	}
	if max := e.MaxContext(); len(req.Prompt)+1 > max {
		return nil, &engine.ContextLengthError{PromptTokens: len(req.Prompt), Limit: max - 1, MaxContext: max}
	}
	e.mu.Lock()
	e.requests = append(e.requests, req)
	e.mu.Unlock()
	ch := make(chan engine.Event)
	go e.stream(ctx, req, ch)
	return ch, nil
}

func (e *FakeEngine) stream(ctx context.Context, req engine.Request, ch chan<- engine.Event) {
	defer signal(e.Done)
	defer close(ch)
	signal(e.Started)
	abort := func() {
		e.mu.Lock()
		e.cancelled++
		e.mu.Unlock()
		ch <- engine.Event{Err: engine.ErrAborted}
	}
	send := func(ev engine.Event) bool {
		if ctx.Err() != nil {
			abort()
			return false
		}
		select {
		case ch <- ev:
			return true
		case <-ctx.Done():
			abort()
			return false
		}
	}
	n := 0
	for _, id := range req.Prompt {
		if id == BOS {
			continue
		}
		if n == req.MaxTokens {
			break
		}
		if fa := int(e.FailAfter.Load()); fa > 0 && n == fa {
			send(engine.Event{Err: engine.ErrInternal})
			return
		}
		if e.Block.Load() && n == 1 {
			<-ctx.Done()
			abort()
			return
		}
		if d := e.DelayNS.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		ev := engine.Event{Token: id, Logprob: -0.5}
		if req.Logprobs {
			ev.TopLogprobs = []engine.TokenLogprob{{Token: id, Logprob: -0.5}, {Token: 'z' + 3, Logprob: -1.5}}[:min(req.TopLogprobs, 2)]
		}
		if n == 0 && req.PromptLogprobs {
			// Prompt token i scores −0.25·i, so a test can tell them apart.
			ev.Prompt = make([]engine.PromptLogprob, len(req.Prompt))
			for i := 1; i < len(req.Prompt); i++ {
				ev.Prompt[i] = engine.PromptLogprob{Logprob: -0.25 * float32(i),
					Top: []engine.TokenLogprob{{Token: req.Prompt[i], Logprob: -0.25 * float32(i)}}[:min(req.TopLogprobs, 1)]}
			}
		}
		if !send(ev) {
			return
		}
		n++
	}
	reason := engine.FinishLength
	if n < req.MaxTokens {
		if !send(engine.Event{Token: EOS}) {
			return
		}
		n++
		reason = engine.FinishStop
	}
	send(engine.Event{Finish: &engine.Finish{Reason: reason, Usage: engine.Usage{PromptTokens: len(req.Prompt), CompletionTokens: n}}})
}

// signal notifies without blocking: once 1024 notifications are unread,
// later ones are dropped, so long benchmarks need not read them.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Cancelled returns how many streams ended because their context was cancelled.
func (e *FakeEngine) Cancelled() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cancelled
}

// Requests returns the requests submitted so far.
func (e *FakeEngine) Requests() []engine.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engine.Request(nil), e.requests...)
}

// LastRequest returns the most recent submitted request.
func (e *FakeEngine) LastRequest() engine.Request {
	r := e.Requests()
	return r[len(r)-1]
}
