package api

import (
	"testing"
)

var fuzzSeeds = []string{
	`{"model":"m","prompt":"hi","max_tokens":5,"temperature":0.7,"stop":["\n"],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"prompt":[1,2,3],"logprobs":2,"seed":-4}`,
	`{"prompt":[[1,2]],"n":1}`,
	`{"prompt":["a","b"],"n":3,"best_of":5}`, `{"prompt":[[1],[2,3]],"n":2,"stream":true}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"logprobs":true,"top_logprobs":3,"max_completion_tokens":4}`,
	`{"messages":[{"role":"system","content":null}],"stop":"x"}`,
	`{"prompt":{"x":1}}`, `[]`, `null`, `{"max_tokens":1e400}`, "{\"prompt\":\"\xff\"}",
}

// The decoders never panic, and whatever they accept validates into
// parameters within their documented ranges.
func FuzzDecodeCompletionRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req completionRequest
		if e := decodeJSON(data, &req); e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("decode error %+v", e)
			}
			return
		}
		p, e := req.params("m", 64)
		if e != nil {
			checkRefusal(t, e)
			return
		}
		checkParams(t, p)
	})
}

// checkRefusal accepts what validation may answer: a 400 with a message,
// or the 404 model_not_found of a model this server does not serve.
func checkRefusal(t *testing.T, e *apiError) {
	t.Helper()
	if e.Message == "" || (e.Status != 400 && !(e.Status == 404 && e.Code == "model_not_found")) {
		t.Fatalf("validation error %+v", e)
	}
}

func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req chatRequest
		if e := decodeJSON(data, &req); e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("decode error %+v", e)
			}
			return
		}
		p, e := req.params("m", 64)
		if e != nil {
			checkRefusal(t, e)
			return
		}
		if len(req.Messages) == 0 {
			t.Fatal("accepted a chat request without messages")
		}
		checkParams(t, p)
	})
}

func checkParams(t *testing.T, p genParams) {
	t.Helper()
	if p.maxTokens < 0 || p.maxTokens > 64 {
		t.Fatalf("max tokens %d outside [0, 64]", p.maxTokens)
	}
	if s := p.sampling; s.Temperature < 0 || s.Temperature > 2 || s.TopP <= 0 || s.TopP > 1 || s.TopK < 0 || s.MinP < 0 || s.MinP > 1 {
		t.Fatalf("sampling out of range: %+v", s)
	}
	if p.topLogprobs < 0 || p.topLogprobs > maxTopLogprobs || len(p.stop) > maxStopStrings {
		t.Fatalf("params out of range: %+v", p)
	}
	for _, s := range p.stop {
		if s == "" {
			t.Fatal("accepted an empty stop string")
		}
	}
	if p.n < 1 || p.bestOf < p.n || p.bestOf > maxChoices || p.stream && p.bestOf > p.n {
		t.Fatalf("choices out of range: n %d best_of %d stream %v", p.n, p.bestOf, p.stream)
	}
}
