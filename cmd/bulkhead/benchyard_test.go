package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestCompareLlamaBenchPairsTests reads llama-bench's JSON (array form and
// JSON-lines form) and divides bulkhead's pp/tg figures by llama.cpp's.
func TestCompareLlamaBenchPairsTests(t *testing.T) {
	res := &kernelsResult{PrefillTokensPerS: 300, DecodeTokensPerS: 20, PromptLen: 512, GenLen: 128, Threads: 2}
	array := `[{"model_type":"llama 1B Q4_K - Medium","n_threads":2,"n_prompt":512,"n_gen":0,"avg_ts":600.0},
	           {"model_type":"llama 1B Q4_K - Medium","n_threads":2,"n_prompt":0,"n_gen":128,"avg_ts":40.0}]`
	lines := `{"n_threads":4,"n_prompt":256,"n_gen":0,"avg_ts":150.0}
{"n_threads":2,"n_prompt":0,"n_gen":128,"avg_ts":25.0}
`
	for name, body := range map[string]string{"array": array, "lines": lines} {
		path := filepath.Join(t.TempDir(), name+".json")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cs, err := compareLlamaBench(path, res)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(cs) != 2 {
			t.Fatalf("%s: %d comparisons, want 2: %+v", name, len(cs), cs)
		}
		want := map[string]float64{"array": 0.5, "lines": 2}[name]
		if math.Abs(cs[0].Ratio-want) > 1e-9 || math.Abs(cs[1].Ratio-20/cs[1].Llama) > 1e-9 {
			t.Errorf("%s: ratios %g, %g", name, cs[0].Ratio, cs[1].Ratio)
		}
		if name == "lines" && cs[0].Note == "" {
			t.Errorf("pp256 against pp512 with other threads carries no note")
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"hello": 1}`), 0o644)
	if _, err := compareLlamaBench(bad, res); err == nil {
		t.Errorf("a file without pp/tg records was accepted")
	}
}
