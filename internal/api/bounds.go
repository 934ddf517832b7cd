package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// What a request costs before it is admitted is bounded whatever its body
// says (DESIGN I11):
//
//   - a declared Content-Length over the limit is a 413 before one byte is
//     read;
//   - bodies are read into buffers of their declared size under a
//     server-wide budget of body bytes in flight (bodyGate), so eight 7 MB
//     bodies at once do not mean eight copies plus their decoded strings;
//   - the tenant's concurrency and rate limits are taken before any
//     tokenizing (serveGeneration);
//   - a prompt's token count is bounded from below without tokenizing it —
//     no token is longer than the vocabulary's longest piece — and
//     otherwise counted in chunks that stop as soon as the count passes the
//     admissible maximum, answering the same 400 context_length_exceeded,
//     "at least N tokens".

// countChunk is how much text is tokenized at a time while counting.
const countChunk = 16 << 10

// bodyGate is a weighted semaphore of body bytes in flight.
type bodyGate struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	waiters []chan struct{}
}

func (g *bodyGate) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(n, g.budget) // a body larger than the budget runs alone
	for {
		g.mu.Lock()
		if g.used+n <= g.budget {
			g.used += n
			g.mu.Unlock()
			return func() { g.release(n) }, nil
		}
		ch := make(chan struct{})
		g.waiters = append(g.waiters, ch)
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (g *bodyGate) release(n int64) {
	g.mu.Lock()
	g.used -= n
	ws := g.waiters
	g.waiters = nil
	g.mu.Unlock()
	for _, ch := range ws {
		close(ch)
	}
}

// readBounded reads a request body of at most limit bytes: 413 at once when
// the declared length is larger, else a buffer of exactly that size taken
// under the body budget. release must be called once the decoded request
// is no longer needed in raw form.
func (s *Server) readBounded(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, func(), *apiError) {
	tooLarge := &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: "request_too_large",
		Message: fmt.Sprintf("request body is larger than the limit of %d bytes", limit), reason: "too_large"}
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close") // do not wait for a body we refuse
		return nil, nil, tooLarge
	}
	want := r.ContentLength
	if want < 0 {
		want = limit // chunked: assume the worst
	}
	release, err := s.bodies.acquire(r.Context(), 3*want) // raw bytes, the decoder's copy, the decoded text
	if err != nil {
		return nil, nil, invalid("", "invalid_body", "request cancelled while waiting to be read: %v", err)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var data []byte
	if r.ContentLength >= 0 {
		data = make([]byte, r.ContentLength) // exactly the declared size, no doubling
		_, err = io.ReadFull(body, data)
	} else {
		var buf bytes.Buffer
		_, err = buf.ReadFrom(body)
		data = buf.Bytes()
	}
	if err != nil {
		release()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, nil, tooLarge
		}
		return nil, nil, invalid("", "invalid_body", "reading request body: %v", err)
	}
	return data, release, nil
}

// maxPieceBytes is the longest token text of the vocabulary (computed once).
func (s *Server) maxPieceBytes() int {
	s.pieceOnce.Do(func() {
		s.pieceMax = 0
		vs, ok := s.tok.(vocabSizer)
		if !ok {
			return
		}
		for id := range vs.VocabSize() {
			s.pieceMax = max(s.pieceMax, len(s.tok.Piece(int32(id))))
		}
	})
	return s.pieceMax
}

// atLeast is the 400 for a prompt known to have at least n tokens.
func (s *Server) atLeast(param string, n, limit int) *apiError {
	maxCtx := s.eng.MaxContext()
	if limit != maxCtx-1 {
		e := invalid(param, codeContextLength, "text has at least %d tokens; /tokenize counts at most %d (max context %d)", n, limit, maxCtx)
		e.reason = codeContextLength
		return e
	}
	cle := &engine.ContextLengthError{PromptTokens: n, Limit: limit, MaxContext: maxCtx}
	e := invalid(param, codeContextLength, "%s", strings.Replace(cle.Error(), "prompt has ", "prompt has at least ", 1))
	e.reason = codeContextLength
	return e
}

// exactBelow is the text size up to which prompts are always tokenized
// whole, so that an ordinary oversized prompt's 400 gives its exact count.
const exactBelow = 64 << 10

// tokenizeLimit is how many tokens /tokenize counts: more than the context,
// since clients (the audit among them) measure texts they will trim.
func (s *Server) tokenizeLimit() int { return max(4*s.eng.MaxContext(), 1<<16) }

// boundText refuses text whose token count certainly exceeds the context,
// from its length alone or by counting chunk by chunk; it tokenizes the
// whole text only when it may fit.
func (s *Server) boundText(param, text string, limit int, addSpecial, parseSpecial bool) ([]int32, *apiError) {
	if len(text) <= exactBelow {
		return s.tok.Encode(text, addSpecial, parseSpecial), nil
	}
	if lp := s.maxPieceBytes(); lp > 0 {
		if lower := len(text) / lp; lower > limit {
			return nil, s.atLeast(param, lower, limit)
		}
	}
	{
		counted, cuts := 0, 0
		for rest := text; rest != ""; cuts++ {
			n := min(len(rest), countChunk)
			if n < len(rest) {
				if i := strings.LastIndexAny(rest[:n], " \n"); i > 0 {
					n = i + 1
				}
			}
			counted += len(s.tok.Encode(rest[:n], false, parseSpecial))
			rest = rest[n:]
			// Each cut can split at most a couple of tokens that the whole
			// text would merge, so this stays a lower bound.
			if lower := counted - 2*cuts; lower > limit {
				return nil, s.atLeast(param, lower, limit)
			}
		}
	}
	return s.tok.Encode(text, addSpecial, parseSpecial), nil
}

// readBody reads and decodes a bounded request body into v.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	data, e := s.readBodyData(w, r)
	if e != nil {
		return e
	}
	return decodeJSON(data, v)
}

// readBodyData reads the body within the limits; the budget is held until
// the request is admitted or refused: its decoded text is what tokenizing
// would otherwise multiply.
func (s *Server) readBodyData(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	data, release, e := s.readBounded(w, r, s.cfg.MaxBodyBytes)
	if e != nil {
		return nil, e
	}
	info := infoFrom(r.Context())
	info.doneWithBody()
	info.releaseBody = release
	return data, nil
}
