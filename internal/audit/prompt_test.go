package audit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func copyWordsForTest() Words {
	return Words{Key: "KEY", Canary: vocab(16), Filler: []string{"f0", "f1", "f2", "f3", "f4"}}
}

// TestCopyLayoutHoldsOneCanaryBehindOneKey checks the copy model's prompt
// contract: filler first, exactly two KEYs with the canary right after the
// first, the final KEY last, and the canary out of the last 32 tokens.
func TestCopyLayoutHoldsOneCanaryBehindOneKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := copyWordsForTest()
		canary := w.Canary[:copyCanaryLen]
		l := layout{
			style: StyleCopy, words: w, canary: canary,
			pos:  rapid.SampledFrom(positions).Draw(t, "pos"),
			seed: rapid.Uint64().Draw(t, "seed"),
		}
		n := rapid.IntRange(0, 400).Draw(t, "filler")
		words := strings.Fields(l.render(n))
		var keys []int
		for i, x := range words {
			if x == "KEY" {
				keys = append(keys, i)
			}
		}
		if len(keys) != 2 || keys[1] != len(words)-1 || keys[0] == 0 {
			t.Fatalf("KEY at %v in %d words, want one inside and one last", keys, len(words))
		}
		if !slices.Equal(words[keys[0]+1:keys[0]+1+copyCanaryLen], canary) {
			t.Fatalf("the first KEY is not followed by the canary: %v", words[keys[0]:keys[0]+1+copyCanaryLen])
		}
		if end := keys[0] + copyCanaryLen; end >= len(words)-tailWords {
			t.Fatalf("canary ends at word %d of %d: inside the last %d", end, len(words), tailWords)
		}
		if got, want := len(words), max(n, l.minFiller())+copyCanaryLen+2; got != want {
			t.Fatalf("%d words for %d filler, want %d", got, n, want)
		}
		for _, x := range words {
			if x != "KEY" && !slices.Contains(canary, x) && !slices.Contains(w.Filler, x) {
				t.Fatalf("stray word %q", x)
			}
		}
	})
}

func TestCanaryPositionOrdersLayouts(t *testing.T) {
	at := map[Position]int{}
	for _, pos := range positions {
		l := layout{style: StyleCopy, words: copyWordsForTest(), canary: vocab(8), pos: pos, seed: 1}
		at[pos] = strings.Index(l.render(300), "KEY")
	}
	if !(at[PosStart] < at[PosMiddle] && at[PosMiddle] < at[PosEnd]) {
		t.Fatalf("canary offsets start %d, middle %d, end %d are not ordered", at[PosStart], at[PosMiddle], at[PosEnd])
	}
}

// charTokenizer is a /tokenize server whose count is not linear in words
// (one token per 3 bytes), so exact lengths are sometimes unreachable.
func charTokenizer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode(map[string]any{"tokens": []int{}, "count": len(req.Prompt)/3 + 1})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFitLandsOnTheRequestedSide: fit returns the exact length when it
// can, else the nearest length on the requested side of the target.
func TestFitLandsOnTheRequestedSide(t *testing.T) {
	srv := charTokenizer(t)
	cnt := &counter{c: &client{base: srv.URL, http: srv.Client(), timeout: 5 * time.Second}, style: StyleCopy, shape: tokVLLMPrompt}
	w := Words{Key: "KEY", Canary: vocab(16), Filler: []string{"f0", "f11", "f222", "f3333"}}
	rapid.Check(t, func(t *rapid.T) {
		l := layout{style: StyleCopy, words: w, canary: w.Canary[:8], pos: rapid.SampledFrom(positions).Draw(t, "pos"), seed: rapid.Uint64().Draw(t, "seed")}
		target := rapid.IntRange(0, 600).Draw(t, "target")
		over := rapid.Bool().Draw(t, "over")
		f, err := fit(context.Background(), cnt, l, target, rapid.IntRange(0, 700).Draw(t, "hint"), over)
		if err != nil {
			t.Fatal(err)
		}
		minimum, _ := cnt.Count(context.Background(), l.render(0))
		if target <= minimum {
			if f.Tokens != minimum {
				t.Fatalf("target %d below the minimum %d: got %d", target, minimum, f.Tokens)
			}
			return
		}
		if got, _ := cnt.Count(context.Background(), f.Text); got != f.Tokens {
			t.Fatalf("reported %d tokens, text counts %d", f.Tokens, got)
		}
		// One filler word is at most 2 tokens here (" f3333" is 6 bytes).
		if over && (f.Tokens < target || f.Tokens > target+2) || !over && (f.Tokens > target || f.Tokens < target-2) {
			t.Fatalf("target %d (over=%v): got %d", target, over, f.Tokens)
		}
	})
}

func TestFitIsExactWhenEachWordIsOneToken(t *testing.T) {
	cnt := &counter{style: StyleCopy, shape: tokNone} // the estimate: one token per word
	w := copyWordsForTest()
	for _, target := range []int{44, 45, 100, 1000, 4097} {
		for _, pos := range positions {
			l := layout{style: StyleCopy, words: w, canary: w.Canary[:8], pos: pos, seed: 9}
			f, err := fit(context.Background(), cnt, l, target, 0, false)
			if err != nil || f.Tokens != target {
				t.Fatalf("target %d at %s: got %d tokens, err %v", target, pos, f.Tokens, err)
			}
		}
	}
}

func TestWordsValidate(t *testing.T) {
	good := copyWordsForTest()
	tests := []struct {
		name   string
		mutate func(*Words)
		ok     bool
	}{
		{"valid", func(*Words) {}, true},
		{"no key", func(w *Words) { w.Key = "" }, false},
		{"too few canary words", func(w *Words) { w.Canary = w.Canary[:7] }, false},
		{"no filler", func(w *Words) { w.Filler = nil }, false},
		{"key is also filler", func(w *Words) { w.Filler = append(slices.Clone(w.Filler), "KEY") }, false},
		{"canary word is also filler", func(w *Words) { w.Filler = append(slices.Clone(w.Filler), w.Canary[3]) }, false},
		{"word with a space", func(w *Words) { w.Canary = append(slices.Clone(w.Canary), "a b") }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := good
			tc.mutate(&w)
			if err := w.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestLayoutSpacing(t *testing.T) {
	w := copyWordsForTest()
	for _, pos := range positions {
		copyText := layout{style: StyleCopy, words: w, canary: w.Canary[:8], pos: pos, seed: 2}.render(40)
		if !strings.HasPrefix(copyText, " f") || strings.Contains(copyText, "  ") {
			t.Errorf("copy prompt at %s must start with a space before its first word and hold no double spaces: %q", pos, copyText)
		}
		natural := layout{style: StyleNatural, canary: []string{"QX7", "49K", "T3M", "6RD"}, pos: pos, seed: 2}.render(40)
		if strings.HasPrefix(natural, " ") || strings.Contains(natural, "  ") || !strings.Contains(natural, "The access code is QX7-49K-T3M-6RD.") {
			t.Errorf("natural prompt at %s is badly spaced or lacks the code: %q", pos, natural)
		}
	}
}
