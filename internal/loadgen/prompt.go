package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
)

// words are common English words; random sequences of them tokenize to
// about one token each with most vocabularies.
var words = strings.Fields(`the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there one all we their has been if more when will would
who so no time people year way day man thing woman life child world school state family student group
country problem hand part place case week company system program question work government number night
point home water room mother area money story fact month lot right study book eye job word business issue
side kind head house service friend father power hour game line end member law car city community name
president team minute idea kid body information back parent face others level office door health person
art war history party result change morning reason research girl guy moment air teacher force education`)

// promptMaker builds prompts of a target token length. With a tokenize
// endpoint it measures and corrects; without one it assumes one word per token.
type promptMaker struct {
	rng      *rand.Rand
	tokenize func(ctx context.Context, text string) (int, error) // nil: not available
}

func (m *promptMaker) words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[m.rng.IntN(len(words))]
	}
	return strings.Join(ws, " ")
}

// make returns a prompt of about target tokens and its measured length
// (0 when it could not be measured).
func (m *promptMaker) make(ctx context.Context, target int) (string, int) {
	n := target
	if m.tokenize == nil {
		return m.words(n), 0
	}
	text := m.words(n)
	got, err := m.tokenize(ctx, text)
	if err != nil {
		return text, 0
	}
	bestText, bestGot := text, got
	for try := 0; got != target && try < 4; try++ {
		// Scale the word count by the measured tokens per word, keeping
		// the closest attempt; real vocabularies land on target in one or
		// two steps since these words are about one token each.
		next := max(1, int(float64(n)*float64(target)/float64(got)+0.5))
		if next == n {
			next = n + sign(target-got)
		}
		n = max(next, 1)
		text = m.words(n)
		if got, err = m.tokenize(ctx, text); err != nil {
			break
		}
		if abs(got-target) < abs(bestGot-target) {
			bestText, bestGot = text, got
		}
	}
	text, got = bestText, bestGot
	return text, got
}

// tokenizer returns a /tokenize client when the server has the endpoint
// (vLLM and bulkhead: {"model","prompt"}; llama.cpp: {"content"}; both
// fields are sent) and nil otherwise.
func tokenizer(ctx context.Context, c *client, model string) func(context.Context, string) (int, error) {
	f := func(ctx context.Context, text string) (int, error) {
		body, _ := json.Marshal(map[string]any{"model": model, "prompt": text, "content": text})
		resp, err := c.do(ctx, http.MethodPost, c.root+"/tokenize", body)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("tokenize: HTTP %d", resp.StatusCode)
		}
		var out struct {
			Tokens []json.RawMessage `json:"tokens"`
			Count  *int              `json:"count"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return 0, fmt.Errorf("tokenize: %w", err)
		}
		if out.Count != nil {
			return *out.Count, nil
		}
		return len(out.Tokens), nil
	}
	if _, err := f(ctx, "probe"); err != nil {
		return nil
	}
	return f
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func abs(x int) int { return max(x, -x) }
