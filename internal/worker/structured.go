package worker

import (
	"fmt"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/grammar"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// Structured output through the gateway: the decode worker samples every
// generated token (prefill only computes the prompt's KV; decode runs the
// last prompt token itself), so the constraint lives here. The gateway
// sends its source (DecodeRequest.Constraint), and the worker compiles it
// over the vocabulary it serves to the gateway (Config.Vocab), so both
// sides mask with the same token pieces.

// structured is a decode worker's compiled-constraint state.
type structured struct {
	once  sync.Once
	vocab *grammar.TokenVocab
	err   error

	mu       sync.Mutex
	grammars map[grammar.Spec]*grammar.Grammar // shared mask memos
}

// maxWorkerGrammars bounds the cache; it starts again when full.
const maxWorkerGrammars = 256

// constrain sets dr's sampling constraint from its spec. A spec that does
// not compile is the request's fault (the gateway compiled it already, so
// this means a different build).
func (w *Worker) constrain(dr *DecodeRequest) error {
	if dr.Constraint == nil {
		return nil
	}
	st := &w.structured
	st.once.Do(func() {
		f, err := gguf.Parse(w.cfg.Vocab)
		if err != nil {
			st.err = err
			return
		}
		tok, err := tokenizer.FromGGUF(f)
		if err != nil {
			st.err = err
			return
		}
		st.vocab = grammar.NewTokenVocab(tok)
	})
	if st.err != nil {
		return fmt.Errorf("%w: structured output needs the vocabulary: %v", engine.ErrInternal, st.err)
	}
	g, err := st.grammar(*dr.Constraint)
	if err != nil {
		return fmt.Errorf("%w: constraint %s: %v", engine.ErrInvalidRequest, dr.Constraint.Kind, err)
	}
	dr.Request.Sampling.Constraint = st.vocab.Constraint(g)
	return nil
}

func (st *structured) grammar(s grammar.Spec) (*grammar.Grammar, error) {
	st.mu.Lock()
	g, ok := st.grammars[s]
	st.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := s.Compile()
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	if st.grammars == nil || len(st.grammars) >= maxWorkerGrammars {
		st.grammars = map[grammar.Spec]*grammar.Grammar{}
	}
	st.grammars[s] = g
	st.mu.Unlock()
	return g, nil
}
