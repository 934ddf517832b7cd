package api

import (
	"encoding/json"
	"net/http"
	"time"
)

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady is true only while the engine is ready (model loaded, KV pool
// holding the configured context: DESIGN I3) and the server is not draining.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	switch {
	case draining:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting_down"})
	case !s.eng.Ready():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []modelCard{{ID: s.cfg.ModelID, Object: "model", Created: time.Now().Unix(),
			OwnedBy: s.cfg.OwnedBy, MaxModelLen: s.eng.MaxContext()}},
	})
}

// handleModel serves GET /v1/models/{id}: the model card, or 404
// model_not_found for any other id.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id != s.cfg.ModelID {
		e := invalid("model", "model_not_found", "model %q does not exist; this server serves %q", id, s.cfg.ModelID)
		e.Status = http.StatusNotFound
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, modelCard{ID: s.cfg.ModelID, Object: "model", Created: time.Now().Unix(),
		OwnedBy: s.cfg.OwnedBy, MaxModelLen: s.eng.MaxContext()})
}

// tokenizeRequest accepts vLLM's {"model","prompt"} and llama.cpp's
// {"content"}; add_special_tokens defaults to true as in vLLM.
type tokenizeRequest struct {
	Model            string  `json:"model"`
	Prompt           *string `json:"prompt"`
	Content          *string `json:"content"`
	AddSpecialTokens *bool   `json:"add_special_tokens"`
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	var req tokenizeRequest
	if e := s.readBody(w, r, &req); e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	if req.Model != "" && req.Model != s.cfg.ModelID {
		s.refuse(w, info.tenant.ID, invalid("model", "model_not_found", "model %q does not exist; this server serves %q", req.Model, s.cfg.ModelID))
		return
	}
	var text string
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Content != nil:
		text = *req.Content
	default:
		s.refuse(w, info.tenant.ID, invalid("prompt", "missing_field", `send the text as "prompt" (or "content")`))
		return
	}
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	ids, e := s.boundText("prompt", text, s.tokenizeLimit(), addSpecial, s.parseSpecial(info.tenant))
	if e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	if ids == nil {
		ids = []int32{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": s.eng.MaxContext()})
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	var req detokenizeRequest
	if e := s.readBody(w, r, &req); e != nil {
		s.refuse(w, info.tenant.ID, e)
		return
	}
	if req.Model != "" && req.Model != s.cfg.ModelID {
		s.refuse(w, info.tenant.ID, invalid("model", "model_not_found", "model %q does not exist; this server serves %q", req.Model, s.cfg.ModelID))
		return
	}
	if vs, ok := s.tok.(vocabSizer); ok {
		for i, id := range req.Tokens {
			if id < 0 || int(id) >= vs.VocabSize() {
				s.refuse(w, info.tenant.ID, invalid("tokens", "invalid_value", "token %d at position %d is outside the vocabulary [0, %d)", id, i, vs.VocabSize()))
				return
			}
		}
	} else {
		for i, id := range req.Tokens {
			if id < 0 {
				s.refuse(w, info.tenant.ID, invalid("tokens", "invalid_value", "token %d at position %d is negative", id, i))
				return
			}
		}
	}
	text := s.tok.Decode(req.Tokens)
	b, _ := json.Marshal(map[string]string{"prompt": text})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}
