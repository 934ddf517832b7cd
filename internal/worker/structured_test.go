package worker

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/grammar"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

func decodeWith(t *testing.T, w *Worker, dr DecodeRequest) *httptest.ResponseRecorder {
	t.Helper()
	b, _ := json.Marshal(dr)
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/worker/decode", strings.NewReader(string(b))))
	return rec
}

// The decode worker compiles the constraint's source over its own
// vocabulary and masks what it samples; a source that does not compile
// is the request's 400.
func TestDecodeAppliesTheConstraintItsSpecNames(t *testing.T) {
	w, _ := newTestWorker(t, Decode)
	f, err := gguf.Parse(w.cfg.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	prompt := tok.Encode("x", false, false)[:1] // one token: decode runs it alone
	spec := &grammar.Spec{Kind: grammar.KindRegex, Source: "[0-9]{2}-(yes|no)"}
	rec := decodeWith(t, w, DecodeRequest{Request: engine.Request{Prompt: prompt, MaxTokens: 40}, Constraint: spec})
	if rec.Code != 200 {
		t.Fatalf("decode: %d %s", rec.Code, rec.Body)
	}
	var ids []int32
	var finish *FinishLine
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Token != nil:
			ids = append(ids, l.Token.ID)
		case l.Finish != nil:
			finish = l.Finish
		case l.Error != nil:
			t.Fatalf("error line %+v", l.Error)
		}
	}
	var text strings.Builder
	for _, id := range ids {
		if !tok.IsEOG(id) {
			text.Write(tok.Piece(id))
		}
	}
	if !regexp.MustCompile(`^[0-9]{2}-(yes|no)$`).MatchString(text.String()) || finish == nil || finish.Reason != engine.FinishStop {
		t.Fatalf("constrained decode wrote %q (finish %+v)", text.String(), finish)
	}

	bad := &grammar.Spec{Kind: grammar.KindGBNF, Source: `root ::= "a`}
	rec = decodeWith(t, w, DecodeRequest{Request: engine.Request{Prompt: prompt, MaxTokens: 4}, Constraint: bad})
	var eb struct{ Error ErrorBody }
	json.Unmarshal(rec.Body.Bytes(), &eb)
	if rec.Code != 400 || eb.Error.Kind != "invalid_request" {
		t.Fatalf("bad grammar: %d %s, want 400 invalid_request", rec.Code, rec.Body)
	}
}
