package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// BenchmarkCompletionRequest measures the server's own cost per request
// (decode, validate, tokenize, admit, detokenize, encode) with an engine
// that answers instantly: 64 prompt bytes echoed back as 32 tokens.
func BenchmarkCompletionRequest(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "sse"
		}
		b.Run(name, func(b *testing.B) {
			srv := NewServer(Config{ModelID: testModel}, apitest.NewFakeEngine(), apitest.ByteTokenizer{}, nil, discardLogger())
			body := `{"prompt":"` + strings.Repeat("abcdefgh", 8) + `","max_tokens":32,"stop":["zz"]`
			if stream {
				body += `,"stream":true`
			}
			body += "}"
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}

func BenchmarkStopMatcherFeed(b *testing.B) {
	pieces := strings.Fields(strings.Repeat("the quick brown fox jumps over the lazy dog ", 16))
	b.ReportAllocs()
	for b.Loop() {
		m := newStopMatcher([]string{"\n\n", "</answer>", "STOP"})
		for _, p := range pieces {
			m.Feed(p)
		}
	}
}
