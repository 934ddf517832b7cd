package audit

import (
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseStreamOutcomes(t *testing.T) {
	chunk := func(text string) string { return `data: {"choices":[{"index":0,"text":"` + text + `"}]}` + "\n\n" }
	tests := []struct {
		name    string
		stream  string
		outcome Outcome
		text    string
		code    string
	}{
		{"complete stream ends with DONE", chunk(" a") + chunk(" b") + "data: [DONE]\n\n", OutcomeOK, " a b", ""},
		{"CRLF line endings", strings.ReplaceAll(chunk(" a")+"data: [DONE]\n\n", "\n", "\r\n"), OutcomeOK, " a", ""},
		{"DONE without trailing blank line", chunk(" a") + "data: [DONE]", OutcomeOK, " a", ""},
		{"comments and unknown fields are ignored", ": ping\nid: 3\n" + chunk(" a") + "data: [DONE]\n\n", OutcomeOK, " a", ""},
		{"chat deltas", `data: {"choices":[{"delta":{"role":"assistant"}}]}` + "\n\n" + `data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n", OutcomeOK, "hi", ""},
		{"stream cut after a chunk", chunk(" a"), OutcomeStreamCut, " a", ""},
		{"empty stream", "", OutcomeStreamCut, "", ""},
		{"event in flight at EOF is not dispatched", chunk(" a") + `data: {"choices":[{"text":" b"}]}`, OutcomeStreamCut, " a", ""},
		{"error chunk", chunk(" a") + `data: {"error":{"message":"pool exhausted","code":"kv_oom"}}` + "\n\ndata: [DONE]\n\n", OutcomeStreamError, " a", "kv_oom"},
		{"error event type with text data", "event: error\ndata: boom\n\n", OutcomeStreamError, "", ""},
		{"error event type with JSON data", "event: error\ndata: {\"error\":{\"message\":\"x\",\"type\":\"server_error\"}}\n\n", OutcomeStreamError, "", "server_error"},
		{"non-JSON data", "data: {oops\n\n", OutcomeMalformed, "", ""},
		{"vLLM flat error chunk", chunk(" a") + `data: {"object":"error","message":"too long","type":"BadRequestError","code":400}` + "\n\ndata: [DONE]\n\n", OutcomeStreamError, " a", "400"},
		{"llama.cpp error line", "error: {\"code\":400,\"message\":\"exceeds context\",\"type\":\"exceed_context_size_error\"}\n\n", OutcomeStreamError, "", "400"},
		{"multi-line data joined", "data: {\"choices\":\ndata: [{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n", OutcomeOK, "x", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := parseStream(200, strings.NewReader(tc.stream))
			if r.Outcome != tc.outcome || r.Text != tc.text || r.ErrCode != tc.code {
				t.Fatalf("got outcome %s text %q code %q; want %s %q %q (detail %q)", r.Outcome, r.Text, r.ErrCode, tc.outcome, tc.text, tc.code, r.Detail)
			}
		})
	}
}

func TestParseStreamReadErrorIsCut(t *testing.T) {
	r := parseStream(200, iotest.TimeoutReader(strings.NewReader("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"+strings.Repeat("x", 1<<17))))
	if r.Outcome != OutcomeStreamCut || !strings.Contains(r.Detail, "read failed") {
		t.Fatalf("got %s %q, want stream-cut after a read failure", r.Outcome, r.Detail)
	}
}

func TestParseBodyShapes(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		outcome Outcome
		text    string
		code    string
	}{
		{"completion", 200, `{"choices":[{"text":" c1 c2","finish_reason":"length"}]}`, OutcomeOK, " c1 c2", ""},
		{"chat completion", 200, `{"choices":[{"message":{"role":"assistant","content":"QX7"},"finish_reason":"stop"}]}`, OutcomeOK, "QX7", ""},
		{"OpenAI error body", 400, `{"error":{"message":"too long","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`, OutcomeRejected, "", "context_length_exceeded"},
		{"vLLM flat error body", 400, `{"object":"error","message":"maximum context length is 4096","type":"BadRequestError","code":400}`, OutcomeRejected, "", "400"},
		{"llama.cpp error body", 400, `{"error":{"code":400,"message":"exceeds context","type":"exceed_context_size_error","n_prompt_tokens":9,"n_ctx":8}}`, OutcomeRejected, "", "400"},
		{"plain text 413", 413, "request entity too large", OutcomeRejected, "", ""},
		{"500", 500, `{"error":{"message":"boom","type":"server_error"}}`, OutcomeServerError, "", "server_error"},
		{"non-JSON 200", 200, "<html>ok</html>", OutcomeMalformed, "", ""},
		{"200 without choices", 200, `{"id":"x"}`, OutcomeMalformed, "", ""},
		{"200 carrying a vLLM flat error", 200, `{"object":"error","message":"m","type":"t","code":500}`, OutcomeServerError, "", "500"},
		{"200 carrying an error", 200, `{"error":{"message":"engine dead","code":"internal"}}`, OutcomeServerError, "", "internal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := parseBody(tc.status, []byte(tc.body))
			if r.Outcome != tc.outcome || r.Text != tc.text || r.ErrCode != tc.code || r.Status != tc.status {
				t.Fatalf("got %s %q code %q status %d; want %s %q %q %d", r.Outcome, r.Text, r.ErrCode, r.Status, tc.outcome, tc.text, tc.code, tc.status)
			}
		})
	}
}

// FuzzParseStream checks that any byte stream is classified without a
// panic, and that only a stream carrying [DONE] is ever complete.
func FuzzParseStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	f.Add("event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n")
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"q\"}}]}\r\n\r\ndata: [DONE]")
	f.Add(": c\n\ndata: [1,2]\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		r := parseStream(200, strings.NewReader(s))
		if r.Outcome == OutcomeOK && !strings.Contains(s, "[DONE]") {
			t.Fatalf("stream without [DONE] judged complete: %q", s)
		}
		switch r.Outcome {
		case OutcomeOK, OutcomeStreamCut, OutcomeStreamError, OutcomeMalformed:
		default:
			t.Fatalf("unexpected outcome %s", r.Outcome)
		}
	})
}

// FuzzParseBody checks that any body is classified without a panic, that
// a non-2xx status is never an answer, and that an answer's text came
// from the body.
func FuzzParseBody(f *testing.F) {
	f.Add(200, `{"choices":[{"text":" a"}]}`)
	f.Add(400, `{"error":{"code":400,"message":"m","type":"t"}}`)
	f.Add(400, `{"object":"error","message":"m","code":"c"}`)
	f.Add(200, `{"error":"oops"}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		r := parseBody(status, []byte(body))
		if (status < 200 || status > 299) && r.Outcome == OutcomeOK {
			t.Fatalf("status %d judged ok", status)
		}
		if r.Outcome != OutcomeOK && r.Text != "" {
			t.Fatalf("outcome %s carries text %q", r.Outcome, r.Text)
		}
	})
}
