package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

const sharedTestdata = "../../../shared/testdata"

func sharedFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedTestdata, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data absent (%v)", err)
	}
	return p
}

// TestGenerateMatchesLlamaCpp runs "generate --json" greedily on
// llama-2-tiny-random and compares with llama.cpp's recorded prompt
// tokens and its generated tokens up to the first near-tie.
func TestGenerateMatchesLlamaCpp(t *testing.T) {
	modelPath := sharedFile(t, "models/llama-2-tiny-random.gguf")
	b, err := os.ReadFile(sharedFile(t, "models/llama-2-tiny-random.reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Results []struct {
			Prompt          string  `json:"prompt"`
			PromptTokens    []int32 `json:"prompt_tokens"`
			GeneratedTokens []int32 `json:"generated_tokens"`
			Steps           []struct {
				Margin float64 `json:"top1_top2_margin"`
			} `json:"steps"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for _, r := range ref.Results {
		t.Run(r.Prompt, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"generate", "--model", modelPath, "--prompt", r.Prompt, "--max-tokens", "16",
				"--temperature", "0", "--threads", "2", "--json"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var out generateOutput
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("output %q: %v", stdout.String(), err)
			}
			if !slices.Equal(out.PromptTokens, r.PromptTokens) {
				t.Errorf("prompt_tokens %v, llama.cpp %v", out.PromptTokens, r.PromptTokens)
			}
			if len(out.Tokens) != 16 {
				t.Fatalf("%d tokens, want 16 (no EOS in the reference)", len(out.Tokens))
			}
			for j, st := range r.Steps {
				if st.Margin < 1e-3 {
					break
				}
				if out.Tokens[j] != r.GeneratedTokens[j] {
					t.Fatalf("token %d is %d, llama.cpp %d", j, out.Tokens[j], r.GeneratedTokens[j])
				}
			}
			if out.Text == "" {
				t.Error("empty text")
			}
		})
	}
}

// TestMkmodelWritesALoadableModel writes the tiny shape with a real
// vocabulary, then generates from it with sampling and a seed (twice: the
// same seed must give the same tokens) and benchmarks it briefly.
func TestMkmodelWritesALoadableModel(t *testing.T) {
	vocab := sharedFile(t, "vocab/ggml-vocab-gpt-2.gguf")
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"mkmodel", "--shape", "tiny", "--type", "q4_k", "--vocab", vocab, "--out", out, "--seed", "3"}, &stdout, &stderr); code != 0 {
		t.Fatalf("mkmodel exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "Q8_0") {
		t.Errorf("mkmodel did not say it fell back from Q4_K for 64-wide rows: %s", stderr.String())
	}
	gen := func() generateOutput {
		var stdout, stderr bytes.Buffer
		code := run([]string{"generate", "--model", out, "--prompt", "Hello world", "--max-tokens", "8",
			"--temperature", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", "11", "--json"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("generate exit %d: %s", code, stderr.String())
		}
		var g generateOutput
		if err := json.Unmarshal(stdout.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := gen(), gen()
	if len(a.Tokens) == 0 || !slices.Equal(a.Tokens, b.Tokens) {
		t.Errorf("seeded runs gave %v and %v", a.Tokens, b.Tokens)
	}
	for _, id := range a.Tokens {
		if id < 0 || id >= 50257 {
			t.Errorf("token %d outside the GPT-2 vocabulary", id)
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"bench", "kernels", "--model", out, "--prompt-len", "16", "--gen-len", "4", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench exit %d: %s", code, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	num := func(k string) float64 { f, _ := res[k].(float64); return f }
	if !(num("prefill_tokens_per_s") > 0 && num("decode_tokens_per_s") > 0 && num("probe_read_gb_per_s") > 0 && num("probe_fma_gflop_per_s") > 0 &&
		num("probe_read_gb_per_cpu_s") > 0 && num("decode_fraction_of_read_probe_per_cpu_s") > 0 &&
		num("probe_weights_read_gb_per_s") > 0 && num("decode_fraction_of_weights_read_probe") > 0) {
		t.Errorf("bench result %v", res)
	}
	if k, _ := res["kernels"].(string); k == "" {
		t.Errorf("bench result names no kernels: %v", res)
	}
	if v, _ := res["kernel_variants"].(string); v == "" {
		t.Errorf("bench result names no kernel variants: %v", res)
	}
	if n := num("row_streams"); n != 1 && n != 2 {
		t.Errorf("bench result row_streams = %v, want 1 or 2", res["row_streams"])
	}
	// --decode-seqs 3: three tokens per step, the weights counted once per
	// step, so tokens per GB of weights read is three times the 1-sequence
	// figure (weight bytes per token = GB/s ÷ tokens/s).
	stdout.Reset()
	if code := run([]string{"bench", "kernels", "--model", out, "--prompt-len", "4", "--gen-len", "4", "--decode-seqs", "3", "--no-probe", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --decode-seqs 3 exit %d: %s", code, stderr.String())
	}
	var res3 map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res3); err != nil {
		t.Fatal(err)
	}
	num3 := func(k string) float64 { f, _ := res3[k].(float64); return f }
	if _, ok := res3["probe_weights_read_gb_per_s"]; ok {
		t.Errorf("--no-probe still read the weights between steps: %v", res3)
	}
	per1 := num("decode_tokens_per_s") / num("decode_weight_gb_per_s")
	per3 := num3("decode_tokens_per_s") / num3("decode_weight_gb_per_s")
	if num3("decode_seqs") != 3 || math.Abs(per3/per1-3) > 1e-9 {
		t.Errorf("--decode-seqs 3: decode_seqs %v, tokens per weight GB %g vs %g for one sequence", res3["decode_seqs"], per3, per1)
	}
}

func TestModelCommandsRejectBadUsage(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		mention string
	}{
		{"generate_model_without_prompt", []string{"generate", "--model", "x.gguf"}, "--prompt is required"},
		{"generate_zero_max_tokens", []string{"generate", "--prompt", "hi", "--max-tokens", "0"}, "--max-tokens 0"},
		{"generate_both_pool_sizes", []string{"generate", "--prompt", "hi", "--kv-tokens", "10", "--kv-memory", "1MiB"}, "not both"},
		{"generate_bad_temperature", []string{"generate", "--model", "x.gguf", "--temperature", "-1"}, "temperature"},
		{"mkmodel_unknown_shape", []string{"mkmodel", "--shape", "gpt-5", "--vocab", "v", "--out", "o"}, `--shape "gpt-5"`},
		{"mkmodel_unknown_type", []string{"mkmodel", "--type", "iq2_xxs", "--vocab", "v", "--out", "o"}, `--type "iq2_xxs"`},
		{"bench_unknown", []string{"bench", "gpu"}, `unknown benchmark "gpu"`},
		{"bench_kernels_zero_seqs", []string{"bench", "kernels", "--model", "x.gguf", "--decode-seqs", "0"}, "--decode-seqs 0"},
		{"bench_serve_without_url", []string{"bench", "serve"}, "--url is required"},
		{"bench_serve_bad_concurrency", []string{"bench", "serve", "--url", "http://127.0.0.1:1", "--concurrency", "0"}, "Concurrency 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tc.mention) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.mention)
			}
		})
	}
}

// Without --model, generate runs the built-in copy model through the
// engine: it must answer a canary prompt with the canary.
func TestGenerateDefaultsToTheCopyModel(t *testing.T) {
	w := copymodel.AuditWords()
	prompt, err := copymodel.Prompt(w.Canary[3:11], 7, 300, 5)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"generate", "--prompt", prompt, "--max-tokens", "8", "--json", "--kv-tokens", "4096"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var out generateOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.PromptTokens) != 300 || strings.TrimSpace(out.Text) != strings.Join(w.Canary[3:11], " ") {
		t.Fatalf("%d prompt tokens, text %q; want 300 and the canary %q", len(out.PromptTokens), out.Text, strings.Join(w.Canary[3:11], " "))
	}
}

// TestMkmodelWritesEveryWeightType writes a 256-wide shape (whole K-quant
// blocks) in every --type and checks each file's matrices carry that type
// and that it generates. The vocabulary is stories260K's 512 tokens, so the
// embedding matrices stay small.
func TestMkmodelWritesEveryWeightType(t *testing.T) {
	vocab := sharedFile(t, "zoo/stories260K-F16.gguf")
	for name, typ := range weightTypes {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name+".gguf")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"mkmodel", "--shape", "tiny256", "--type", name, "--vocab", vocab, "--out", out}, &stdout, &stderr); code != 0 {
				t.Fatalf("mkmodel exit %d: %s", code, stderr.String())
			}
			f, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, ti := range f.Tensors {
				if strings.HasSuffix(ti.Name, "ffn_up.weight") && ti.Type != typ {
					t.Fatalf("%s is %s, want %s", ti.Name, ti.Type, typ)
				}
			}
			stdout.Reset()
			if code := run([]string{"generate", "--model", out, "--prompt", "Hello", "--max-tokens", "3", "--json"}, &stdout, &stderr); code != 0 {
				t.Fatalf("generate exit %d: %s", code, stderr.String())
			}
		})
	}
}

// TestMkmodelWritesTheQ4KMMix checks --type q4_k_m against llama.cpp's
// recipe on tiny256 (two layers, untied): output.weight and the last
// layer's attn_v and ffn_down are Q6_K, everything else Q4_K; the file
// generates.
func TestMkmodelWritesTheQ4KMMix(t *testing.T) {
	vocab := sharedFile(t, "zoo/stories260K-F16.gguf")
	out := filepath.Join(t.TempDir(), "q4km.gguf")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"mkmodel", "--shape", "tiny256", "--type", "q4_k_m", "--vocab", vocab, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("mkmodel exit %d: %s", code, stderr.String())
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q6 := map[string]bool{"output.weight": true, "blk.1.attn_v.weight": true, "blk.1.ffn_down.weight": true}
	for _, ti := range f.Tensors {
		if len(ti.Dims) != 2 {
			continue
		}
		want := gguf.Q4_K
		if q6[ti.Name] {
			want = gguf.Q6_K
		}
		if ti.Type != want {
			t.Errorf("%s is %s, want %s", ti.Name, ti.Type, want)
		}
	}
	if ft, _ := f.Int("general.file_type"); ft != 15 {
		t.Errorf("general.file_type %d, want 15 (MOSTLY_Q4_K_M)", ft)
	}
	if code := run([]string{"generate", "--model", out, "--prompt", "Hello", "--max-tokens", "3", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("generate exit %d: %s", code, stderr.String())
	}
}
