package api

import (
	"bytes"
	"errors"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/chat"
)

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	var req chatRequest
	if e := s.readRequest(w, r, chatFields, &req); e != nil {
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
	var tools *chatTools
	if e == nil {
		tools, e = s.applyTools(&req.toolRequest, &p)
	}
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	conv, e := s.conversation(&req)
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	// The template writes the special tokens (BOS included) itself; the
	// tenant's text stays text (special.go). Tokenized only after the
	// tenant's limits admit the request (bounds.go).
	tokenize := func() ([]int32, *apiError) { return s.encodeChat(conv, s.parseSpecial(info.tenant)) }
	p.defaultMax = s.cfg.DefaultMaxTokens // 0: the rest of the context, as OpenAI and vLLM
	info.logUser(req.User, req.SafetyID)
	sh := &chatShape{s: s, id: "chatcmpl-" + info.id, created: time.Now().Unix(), model: s.cfg.ModelID,
		logprobs: p.logprobs, nullUsage: p.includeUsage, tools: tools}
	s.serveGeneration(w, r, tokenize, p, "messages", sh)
}

// renderChat renders a chat request's conversation with the model's
// template: the one code path of /v1/chat/completions, /apply-template
// and /v1/chat/render, so what those two show is what would run.
func (s *Server) renderChat(req *chatRequest) (string, *apiError) {
	conv, e := s.conversation(req)
	if e != nil {
		return "", e
	}
	text, err := s.chatTmpl.RenderConversation(conv)
	switch {
	case errors.Is(err, chat.ErrKwarg):
		return "", invalid("chat_template_kwargs", "invalid_value", "%v", err)
	case err != nil:
		return "", invalid("messages", "invalid_value", "%v", err)
	}
	return text, nil
}

// conversation is what a chat request hands the template.
func (s *Server) conversation(req *chatRequest) (chat.Conversation, *apiError) {
	if s.chatTmpl == nil {
		e := invalid("messages", "chat_template_missing", "%v", s.chatErr)
		if !errors.Is(s.chatErr, chat.ErrNoTemplate) {
			e.Message = "this model's chat template could not be compiled; use /v1/completions"
		}
		return chat.Conversation{}, e
	}
	conv := chat.Conversation{AddGenerationPrompt: req.AddGenerationPrompt == nil || *req.AddGenerationPrompt,
		BOSToken: s.tok.TokenText(s.tok.BOS()), EOSToken: s.tok.TokenText(s.tok.EOS()),
		Documents: req.Documents, Kwargs: req.ChatTemplateKwargs}
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
		conv.Tools = t
	}
	for _, m := range req.Messages {
		conv.Messages = append(conv.Messages, m.raw)
	}
	return conv, nil
}

// handleApplyTemplate is llama-server's POST /apply-template (also
// /v1/chat/render): a chat request in, {"prompt": TEXT} out, rendered by
// the same code as /v1/chat/completions, without generating.
func (s *Server) handleApplyTemplate(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	var req chatRequest
	if e := s.readRequest(w, r, chatFields, &req); e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	_, e := req.params(s.cfg.ModelID, s.eng.MaxContext())
	if e == nil {
		_, e = s.checkTools(&req.toolRequest)
	}
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	text, e := s.renderChat(&req)
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}

// chatShape renders /v1/chat/completions bodies.
type chatShape struct {
	s         *Server
	id        string
	created   int64
	model     string
	logprobs  bool
	nullUsage bool       // see completionShape
	tools     *chatTools // nil: the output is not read for tool calls
}

type chatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type chatMessageOut struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"` // null: only tool calls
	ToolCalls []toolCallOut `json:"tool_calls,omitempty"`
}

// chatLogprobs is the chat logprobs layout: one entry per token with its
// bytes and its own top alternatives.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string          `json:"token"`
	Logprob     float32         `json:"logprob"`
	Bytes       []int           `json:"bytes"`
	TopLogprobs []chatTopLogpob `json:"top_logprobs"`
}

type chatTopLogpob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessageOut `json:"message,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	Logprobs     *chatLogprobs   `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chatBody struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   any          `json:"usage,omitempty"` // *usageJSON, jsonNull or nil
}

func (c *chatShape) chunk(choices []chatChoice, u *usageJSON) chatBody {
	return chatBody{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: choices,
		Usage: usageValue(u, c.nullUsage)}
}

func (c *chatShape) bytesOf(id int32) (string, []int) {
	piece := c.s.tok.Piece(id)
	b := make([]int, len(piece))
	for i, x := range piece {
		b[i] = int(x)
	}
	return string(piece), b
}

func (c *chatShape) lps(tokens []tokenLP) *chatLogprobs {
	if !c.logprobs {
		return nil
	}
	out := &chatLogprobs{Content: []chatTokenLogprob{}}
	for _, t := range tokens {
		tok, b := c.bytesOf(t.id)
		e := chatTokenLogprob{Token: tok, Logprob: t.logprob, Bytes: b, TopLogprobs: []chatTopLogpob{}}
		for _, alt := range t.top {
			at, ab := c.bytesOf(alt.Token)
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogpob{Token: at, Logprob: alt.Logprob, Bytes: ab})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

func (c *chatShape) first() any {
	empty := ""
	return c.chunk([]chatChoice{{Delta: &chatDelta{Role: "assistant", Content: &empty}}}, nil)
}

func (c *chatShape) delta(ch chunk) any {
	if c.tools != nil {
		return c.toolDelta(ch)
	}
	text := ch.text
	return c.chunk([]chatChoice{{Delta: &chatDelta{Content: &text}, Logprobs: c.lps(ch.tokens)}}, nil)
}

func (c *chatShape) final(finish string) any {
	if c.tools != nil {
		return c.toolFinal(finish)
	}
	return c.chunk([]chatChoice{{Delta: &chatDelta{}, FinishReason: &finish}}, nil)
}

func (c *chatShape) usageChunk(u usageCounts) any {
	return c.chunk([]chatChoice{}, u.json())
}

func (c *chatShape) full(text string, lps []tokenLP, finish string, u usageCounts) any {
	m := chatMessageOut{Role: "assistant", Content: &text}
	if c.tools != nil {
		m, finish = c.tools.message(text, finish)
	}
	b := chatBody{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model, Usage: u.json(),
		Choices: []chatChoice{{Message: &m, Logprobs: c.lps(lps), FinishReason: &finish}}}
	return b
}
