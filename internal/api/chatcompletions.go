package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/chat"
)

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	var req chatRequest
	if e := s.readBody(w, r, &req); e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	p, e := req.params(s.cfg.ModelID, s.eng.MaxContext())
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	if s.chatTmpl == nil {
		e := invalid("messages", "chat_template_missing", "%v", s.chatErr)
		if !errors.Is(s.chatErr, chat.ErrNoTemplate) {
			e.Message = "this model's chat template could not be compiled; use /v1/completions"
		}
		s.refuse(w, info.tenant.ID, e)
		return
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = chat.Message{Role: m.Role, Content: string(m.Content)}
	}
	// The template writes the special tokens (BOS included) itself; the
	// messages' contents stay text (special.go).
	tokenize := func() ([]int32, *apiError) {
		return s.encodeChat(msgs, chat.Options{AddGenerationPrompt: true,
			BOSToken: s.tok.TokenText(s.tok.BOS()), EOSToken: s.tok.TokenText(s.tok.EOS())}, s.parseSpecial(info.tenant))
	}
	sh := &chatShape{s: s, id: "chatcmpl-" + info.id, created: time.Now().Unix(), model: s.cfg.ModelID,
		logprobs: p.logprobs}
	s.serveGeneration(w, r, tokenize, p, "messages", sh)
}

// chatShape renders /v1/chat/completions bodies.
type chatShape struct {
	s        *Server
	id       string
	created  int64
	model    string
	logprobs bool
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatMessageOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
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
	Usage   *usageJSON   `json:"usage,omitempty"`
}

func (c *chatShape) chunk(choices []chatChoice, u *usageJSON) chatBody {
	return chatBody{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: choices, Usage: u}
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
	text := ch.text
	return c.chunk([]chatChoice{{Delta: &chatDelta{Content: &text}, Logprobs: c.lps(ch.tokens)}}, nil)
}

func (c *chatShape) final(finish string) any {
	return c.chunk([]chatChoice{{Delta: &chatDelta{}, FinishReason: &finish}}, nil)
}

func (c *chatShape) usageChunk(u usageCounts) any {
	return c.chunk([]chatChoice{}, u.json())
}

func (c *chatShape) full(text string, lps []tokenLP, finish string, u usageCounts) any {
	b := chatBody{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model, Usage: u.json(),
		Choices: []chatChoice{{Message: &chatMessageOut{Role: "assistant", Content: text}, Logprobs: c.lps(lps), FinishReason: &finish}}}
	return b
}
