// Package auditfake is a scriptable OpenAI-compatible server for testing
// the audit: it answers the way an honest server, a leaky one, one with a
// hidden capacity cliff, one that fails with 500 or one that cuts its
// streams would. It implements the copy model's behaviour on whole words
// (the answer is the words after the first KEY) and an instruction
// model's on the natural style's access code, so the audit's verdicts can
// be checked against servers whose faults are known.
package auditfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
)

// Fault selects how the server misbehaves.
type Fault int

const (
	Honest Fault = iota
	// Cliff answers 200 with filler instead of the canary for prompts
	// longer than CliffTokens.
	Cliff
	// LeakOversized answers prompts of MaxContext tokens or more with 200
	// and the most recent canary another request sent, like the incident.
	LeakOversized
	// Error500Oversized answers prompts of MaxContext tokens or more with
	// 500.
	Error500Oversized
	// CutStreams ends every stream after the first chunk, without [DONE].
	CutStreams
	// CrashOversized drops the connection of a prompt of MaxContext
	// tokens or more and of every request after it, like a server that
	// died.
	CrashOversized
)

// TokenizeShape selects which /tokenize request shape the server accepts.
type TokenizeShape int

const (
	TokenizeVLLM     TokenizeShape = iota // {"model","prompt"} and {"model","messages"}
	TokenizeLlamaCPP                      // {"content"} only
	TokenizeNone                          // no /tokenize endpoint
)

// Options configures a fake server.
type Options struct {
	Model       string
	MaxContext  int
	Key         string // the copy style's KEY word
	Fault       Fault
	CliffTokens int
	Tokenize    TokenizeShape
	// APIKeys, when set, are the only bearer tokens accepted.
	APIKeys []string
	// HideMaxLen leaves max_model_len out of /v1/models.
	HideMaxLen bool
	// ClampTokens, when positive, cuts every answer to that many words
	// with finish_reason "length", like a server that clamps max_tokens
	// below what the request asked and the context allows.
	ClampTokens int
}

// Server is a running fake.
type Server struct {
	*httptest.Server
	opts Options

	mu      sync.Mutex
	canary  map[string]string // user -> last canary text sent
	order   []string          // users in the order their canaries arrived
	Request int               // completions served
	dead    bool
}

// New starts a fake server; Close it when done.
func New(opts Options) *Server {
	if opts.Model == "" {
		opts.Model = "fake"
	}
	s := &Server{opts: opts, canary: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	if opts.Tokenize != TokenizeNone {
		mux.HandleFunc("POST /tokenize", s.tokenize)
	}
	mux.HandleFunc("POST /v1/completions", s.complete)
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	s.Server = httptest.NewServer(s.auth(mux))
	return s
}

func (s *Server) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		dead := s.dead
		s.mu.Unlock()
		if dead {
			hangUp(w)
			return
		}
		if len(s.opts.APIKeys) > 0 {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			ok := false
			for _, k := range s.opts.APIKeys {
				ok = ok || k == got
			}
			if !ok {
				writeError(w, http.StatusUnauthorized, "invalid_api_key", "bad key")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{"id": s.opts.Model, "object": "model"}
	if !s.opts.HideMaxLen {
		m["max_model_len"] = s.opts.MaxContext
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{m}})
}

// Tokens counts a text the way the fake's tokenizer does: one token per
// whitespace-separated word plus a BOS. A chat message adds a 5-token
// template.
func Tokens(text string) int { return len(strings.Fields(text)) + 1 }

const chatTemplateTokens = 5

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Prompt   *string
		Content  *string
		Messages []struct{ Content string }
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "bad json")
		return
	}
	n := -1
	switch {
	case s.opts.Tokenize == TokenizeVLLM && req.Prompt != nil:
		n = Tokens(*req.Prompt)
	case s.opts.Tokenize == TokenizeVLLM && len(req.Messages) > 0:
		n = Tokens(req.Messages[0].Content) + chatTemplateTokens
	case s.opts.Tokenize == TokenizeLlamaCPP && req.Content != nil:
		n = Tokens(*req.Content)
	}
	if n < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", "unsupported tokenize request")
		return
	}
	toks := make([]int, n)
	for i := range toks {
		toks[i] = i + 7
	}
	if s.opts.Tokenize == TokenizeLlamaCPP {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": toks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": toks, "count": n, "max_model_len": s.opts.MaxContext})
}

var accessCode = regexp.MustCompile(`The access code is ([A-Z0-9-]+)\.`)

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt    string
		Messages  []struct{ Content string }
		MaxTokens int `json:"max_tokens"`
		Stream    bool
		User      string
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "bad json")
		return
	}
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	prompt, tokens := req.Prompt, Tokens(req.Prompt)
	if chat && len(req.Messages) > 0 {
		prompt = req.Messages[0].Content
		tokens = Tokens(prompt) + chatTemplateTokens
	}
	if tokens >= s.opts.MaxContext && s.opts.Fault == CrashOversized {
		s.mu.Lock()
		s.dead = true
		s.mu.Unlock()
		hangUp(w)
		return
	}
	if tokens+1 > s.opts.MaxContext && s.opts.Fault != LeakOversized && s.opts.Fault != Error500Oversized {
		writeError(w, http.StatusBadRequest, "context_length_exceeded",
			fmt.Sprintf("prompt has %d tokens; the context holds %d", tokens, s.opts.MaxContext))
		return
	}
	if tokens >= s.opts.MaxContext && s.opts.Fault == Error500Oversized {
		writeError(w, http.StatusInternalServerError, "internal_error", "out of KV pages")
		return
	}
	var out []string
	if chat {
		if m := accessCode.FindStringSubmatch(prompt); m != nil {
			out = []string{"The", "access", "code", "is", m[1] + "."}
		}
	} else {
		out = copyAnswer(prompt, s.opts.Key, req.MaxTokens)
	}
	finish := "stop"
	if room := s.opts.MaxContext - tokens; room < req.MaxTokens {
		finish = "length"
		out = out[:min(len(out), max(room, 0))]
	}
	if s.opts.ClampTokens > 0 && len(out) > s.opts.ClampTokens {
		out, finish = out[:s.opts.ClampTokens], "length"
	}
	s.mu.Lock()
	s.Request++
	if s.opts.Fault == LeakOversized && tokens >= s.opts.MaxContext {
		if stolen := s.stolen(req.User); stolen != "" {
			out, finish = strings.Fields(stolen), "stop"
		}
	}
	if len(out) > 0 {
		s.remember(req.User, strings.Join(out, " "))
	}
	s.mu.Unlock()
	if s.opts.Fault == Cliff && tokens > s.opts.CliffTokens {
		out = []string{"lost", "pages", "of", "kv"}
	}
	if req.Stream {
		s.stream(w, chat, out, finish)
		return
	}
	text := " " + strings.Join(out, " ")
	choice := map[string]any{"index": 0, "text": text, "finish_reason": finish}
	if chat {
		choice = map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": text}, "finish_reason": finish}
	}
	writeJSON(w, http.StatusOK, map[string]any{"choices": []any{choice}})
}

// copyAnswer is the copy model's greedy output: the words that follow the
// first KEY.
func copyAnswer(prompt, key string, n int) []string {
	words := strings.Fields(prompt)
	for i, w := range words {
		if w == key {
			return words[i+1 : min(len(words), i+1+n)]
		}
	}
	return nil
}

// stolen returns the newest canary a different user sent, or the newest
// of this user's own when no other user has sent one. Called with mu held.
func (s *Server) stolen(user string) string {
	for i := len(s.order) - 1; i >= 0; i-- {
		if s.order[i] != user {
			return s.canary[s.order[i]]
		}
	}
	return s.canary[user]
}

func (s *Server) remember(user, text string) {
	s.canary[user] = text
	s.order = append(s.order, user)
}

func (s *Server) stream(w http.ResponseWriter, chat bool, out []string, finish string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(text string, fin any) {
		c := map[string]any{"index": 0, "text": text, "finish_reason": fin}
		if chat {
			c = map[string]any{"index": 0, "delta": map[string]string{"content": text}, "finish_reason": fin}
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{c}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	for i, word := range out {
		chunk(" "+word, nil)
		if s.opts.Fault == CutStreams && i == 0 {
			return
		}
	}
	chunk("", finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// hangUp closes the connection without a response.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
