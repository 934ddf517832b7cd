package audit

import (
	"encoding/json"
	"testing"
)

func TestParseTokenCount(t *testing.T) {
	tests := []struct {
		name string
		body string
		want int
	}{
		{"vLLM count wins", `{"count":5,"max_model_len":4096,"tokens":[1,2,3,4,5]}`, 5},
		{"llama.cpp ids", `{"tokens":[1,2,3]}`, 3},
		{"llama.cpp pieces", `{"tokens":[{"id":1,"piece":"a"},{"id":2,"piece":"b"}]}`, 2},
		{"empty prompt", `{"tokens":[]}`, 0},
		{"error body", `{"error":{"message":"no"}}`, 0},
		{"not JSON", `<html>`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseTokenCount([]byte(tc.body)); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// FuzzParseTokenCount: any body gives a count without a panic, and a body
// that is not valid JSON gives 0.
func FuzzParseTokenCount(f *testing.F) {
	f.Add(`{"count":5,"tokens":[1]}`)
	f.Add(`{"tokens":[{"id":1}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		n := parseTokenCount([]byte(body))
		if n < 0 {
			t.Fatalf("negative count %d", n)
		}
		if n != 0 && !json.Valid([]byte(body)) {
			t.Fatalf("count %d from invalid JSON %q", n, body)
		}
	})
}
