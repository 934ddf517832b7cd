package api

import (
	"cmp"
	"net/http"
	"time"
)

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	var req completionRequest
	if e := s.readRequest(w, r, completionFields, &req); e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	p, e := req.params(s.cfg.ModelID, s.eng.MaxContext())
	if e == nil {
		e = checkTokenIDs(&p, s.tok)
	}
	if e == nil {
		e = s.applyStructured(&req.structuredRequest, &p)
	}
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	// OpenAI's default for completions is 16 tokens.
	p.defaultMax = cmp.Or(s.cfg.DefaultMaxTokens, 16)
	info.logUser(req.User, req.SafetyID)
	sh := &completionShape{s: s, id: "cmpl-" + info.id, created: time.Now().Unix(), model: s.cfg.ModelID,
		logprobs: p.logprobs, nullUsage: p.includeUsage}
	// Tokenized only after the tenant's limits admit the request (bounds.go).
	tokenize := func() ([]int32, *apiError) {
		prompt, e := s.promptTokens(req.Prompt, s.parseSpecial(info.tenant))
		if e == nil && req.Echo {
			sh.echo = req.Prompt.text
			if req.Prompt.isIDs {
				sh.echo = s.tok.Decode(prompt)
			}
		}
		return prompt, e
	}
	if req.Prompt.count() > 1 {
		s.serveCompletionList(w, r, &req, p, sh)
		return
	}
	s.serveGeneration(w, r, tokenize, p, "prompt", sh)
}

// promptTokens tokenizes a text prompt, or range-checks a token-id prompt.
func (s *Server) promptTokens(pf promptField, parseSpecial bool) ([]int32, *apiError) {
	if !pf.isIDs {
		return s.boundText("prompt", pf.text, s.eng.MaxContext()-1, true, parseSpecial)
	}
	vs, ok := s.tok.(vocabSizer)
	if !ok {
		return nil, invalid("prompt", "unsupported_value", "prompts given as token ids are not supported by this model's tokenizer; send text")
	}
	n := vs.VocabSize()
	cc, _ := s.tok.(controlChecker)
	for i, id := range pf.tokens {
		if id < 0 || int(id) >= n {
			return nil, invalid("prompt", "invalid_value", "prompt token %d at position %d is outside the vocabulary [0, %d)", id, i, n)
		}
		if cc != nil && !parseSpecial && cc.IsControl(id) && !(i == 0 && id == s.tok.BOS()) {
			return nil, invalid("prompt", "invalid_value", "prompt token %d at position %d is a control token; only a leading BOS is accepted unless special tokens are allowed for this tenant", id, i)
		}
	}
	return pf.tokens, nil
}

// completionShape renders /v1/completions bodies.
type completionShape struct {
	s        *Server
	id       string
	created  int64
	model    string
	logprobs bool
	// nullUsage: the stream asked for usage, so every chunk before the
	// usage chunk carries "usage": null, as OpenAI sends it.
	nullUsage bool
	// echo is the prompt text, sent before the completion (echo = true).
	echo string
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// completionLogprobs is the legacy completions logprobs layout:
// parallel arrays, top alternatives as token → logprob maps.
type completionLogprobs struct {
	Tokens []string `json:"tokens"`
	// An echoed prompt's first token has null for both (no context).
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionBody struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   any                `json:"usage,omitempty"` // *usageJSON, jsonNull or nil
}

func (c *completionShape) body(choices []completionChoice, u *usageJSON) completionBody {
	return completionBody{ID: c.id, Object: "text_completion", Created: c.created, Model: c.model, Choices: choices,
		Usage: usageValue(u, c.nullUsage)}
}

func (c *completionShape) lps(tokens []tokenLP) *completionLogprobs {
	if !c.logprobs {
		return nil
	}
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []*float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, t := range tokens {
		out.Tokens = append(out.Tokens, string(c.s.tok.Piece(t.id)))
		out.TextOffset = append(out.TextOffset, t.offset)
		if t.noContext {
			out.TokenLogprobs, out.TopLogprobs = append(out.TokenLogprobs, nil), append(out.TopLogprobs, nil)
			continue
		}
		out.TokenLogprobs = append(out.TokenLogprobs, &t.logprob)
		top := make(map[string]float32, len(t.top))
		for _, alt := range t.top {
			top[string(c.s.tok.Piece(alt.Token))] = alt.Logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
	}
	return out
}

// first sends the echoed prompt, if any, as the stream's first text.
func (c *completionShape) first() any {
	if c.echo == "" {
		return nil
	}
	return c.body([]completionChoice{{Text: c.echo}}, nil)
}

func (c *completionShape) delta(ch chunk) any {
	return c.body([]completionChoice{{Text: ch.text, Logprobs: c.lps(ch.tokens)}}, nil)
}

func (c *completionShape) final(finish string) any {
	return c.body([]completionChoice{{FinishReason: &finish}}, nil)
}

func (c *completionShape) usageChunk(u usageCounts) any {
	return c.body([]completionChoice{}, u.json())
}

func (c *completionShape) full(text string, lps []tokenLP, finish string, u usageCounts) any {
	return c.body([]completionChoice{{Text: c.echo + text, Logprobs: c.lps(lps), FinishReason: &finish}}, u.json())
}
