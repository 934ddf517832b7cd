package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// shape builds the endpoint-specific JSON bodies of one generation.
type shape interface {
	// first is the opening stream chunk, or nil (chat sends the role).
	first() any
	delta(c chunk) any
	final(finish string) any
	usageChunk(u usageCounts) any
	full(text string, lps []tokenLP, finish string, u usageCounts) any
}

// serveGeneration runs an admitted-or-refused generation and writes the
// response: one JSON body, or an SSE stream ending in [DONE] on success and
// in an error event otherwise.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, tokenize func() ([]int32, *apiError), p genParams, param string, sh shape) {
	if p.bestOf > 1 { // n > 1 (choices.go)
		one := func() ([][]int32, *apiError) {
			prompt, e := tokenize()
			return [][]int32{prompt}, e
		}
		s.serveChoices(w, r, one, p, param, func(int) shape { return sh })
		return
	}
	info := infoFrom(r.Context())
	t := info.tenant
	if e := s.gateKVTransfer(r, info, p); e != nil {
		s.refuse(w, t.ID, e)
		return
	}
	if !s.enter() {
		s.refuse(w, t.ID, shuttingDown())
		return
	}
	defer s.leave()
	lease, err := t.Limiter().Acquire()
	if err != nil {
		var le *tenant.LimitError
		if errors.As(err, &le) {
			s.refuse(w, t.ID, limitError(le))
		} else {
			s.refuse(w, t.ID, internalError(info.id))
		}
		return
	}
	defer lease.Release()

	// Limits first, then tokenizing (DESIGN I11, bounds.go).
	prompt, perr := tokenize()
	if perr != nil {
		info.doneWithBody()
		s.refuse(w, t.ID, perr)
		return
	}
	a, aerr := s.admit(r, info, prompt, &p, param)
	info.doneWithBody()
	if aerr != nil {
		s.refuse(w, t.ID, aerr)
		return
	}
	defer a.release()
	lease.Charge(a.prompt) // charged up front so parallel requests see it

	var res genResult
	if p.stream {
		res = s.stream(w, r, a, p, info.start, sh)
	} else {
		res = s.respond(w, a, p, info, sh)
	}
	lease.Charge(res.usage.completion)
	info.completionTokens = res.usage.completion
	s.metrics.finished(t.ID, s.outcome(res, r), res.timing, res.usage)
}

func (s *Server) refuse(w http.ResponseWriter, tenantID string, e *apiError) {
	s.metrics.rejected(tenantID, e.reason)
	writeError(w, e)
}

func (s *Server) outcome(res genResult, r *http.Request) string {
	switch {
	case res.err == nil:
		return res.finish
	case res.clientErr || r.Context().Err() != nil:
		return "cancelled"
	default:
		return "error"
	}
}

// streamError is the error to send for a failed stream. Engine errors keep
// their internal detail in the log only.
func (s *Server) streamError(res genResult, info *requestInfo) *apiError {
	if s.base.Err() != nil {
		return shuttingDown()
	}
	if !errors.Is(res.err, engine.ErrAborted) && !errors.Is(res.err, engine.ErrShuttingDown) {
		info.log.Error("generation failed", "err", res.err)
	}
	return engineError(res.err, "", info.id)
}

func (s *Server) respond(w http.ResponseWriter, a *admission, p genParams, info *requestInfo, sh shape) genResult {
	var text []byte
	var lps []tokenLP
	res := s.run(a, p, info.start, func(c chunk) error {
		text = append(text, c.text...)
		lps = append(lps, c.tokens...)
		return nil
	})
	s.setWriteDeadline(w)
	if res.err != nil {
		writeError(w, s.streamError(res, info))
		return res
	}
	writeJSON(w, http.StatusOK, withKVReply(sh.full(string(text), lps, res.finish, res.usage), info.kvt))
	return res
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, a *admission, p genParams, arrival time.Time, sh shape) genResult {
	info := infoFrom(r.Context())
	sse := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: s.cfg.WriteTimeout}
	sse.start()
	if f := sh.first(); f != nil {
		if err := sse.send(f); err != nil {
			return genResult{err: err, clientErr: true, usage: usageCounts{prompt: a.prompt}, timing: timing{arrival: arrival}}
		}
	}
	res := s.run(a, p, arrival, func(c chunk) error { return sse.sendAll(sh.delta(c)) })
	if res.clientErr {
		return res
	}
	if res.err != nil {
		if r.Context().Err() == nil {
			_ = sse.send(s.streamError(res, info).body())
		}
		return res
	}
	if err := sse.sendAll(sh.final(res.finish)); err != nil {
		return res
	}
	if p.includeUsage {
		if err := sse.send(sh.usageChunk(res.usage)); err != nil {
			return res
		}
	}
	_ = sse.done()
	return res
}

// sseWriter writes server-sent events as OpenAI does: "data: {json}\n\n",
// ending with "data: [DONE]\n\n". Each write has its own deadline so a
// client that stops reading cannot hold the request.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *sseWriter) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
}

func (s *sseWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *sseWriter) done() error { return s.write([]byte("data: [DONE]\n\n")) }

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *Server) setWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
}
