package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
)

const zooDir = "../../../shared/testdata/zoo"

// readZooRef reads one llama.cpp reference of the zoo (see its README).
func readZooRef(t *testing.T, name string) *llamaCppReference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(zooDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var ref llamaCppReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return &ref
}

// f32MathRef names the F32-throughout reference of a zoo file: its own, or
// for F16/BF16 files (which hold their master's weights exactly) the
// master's.
func f32MathRef(stem string) string {
	if _, err := os.Stat(filepath.Join(zooDir, stem+".f32-math.reference.json")); err == nil {
		return stem + ".f32-math.reference.json"
	}
	for _, s := range []string{"-F16", "-BF16"} {
		if strings.HasSuffix(stem, s) {
			return strings.TrimSuffix(stem, s) + "-F32.f32-math.reference.json"
		}
	}
	return ""
}

// defaultTolerance bounds |Δ logprob| against the default reference (F16
// KV, flash attention), which TestZoo runs as llama.cpp ran it: an F16 KV
// cache and the emulations of ggml's flash attention, rope cache, F32/F16
// products, SwiGLU, MoE router rounding and repacked kernels
// (Options.GGMLFlashAttention, GGMLRope, GGMLFloatMatMul, GGMLRepack).
// Measured there (BULKHEAD_LONG=1, 41 files; docs/zoo-accuracy.md):
//
//   - int8 activations (every quantized file; 33 files, including those
//     with Q4_0, Q4_K, IQ4_NL or Q2_K, which llama.cpp repacks on x86 and
//     which went from 0.07–0.30 to ≤ 8.5e-6 with GGMLRepack): ≤ 8.6e-6 on
//     every prompt but gemma3's 296-token one, hence 1e-4 (the zoo
//     README's exact-path figure); gemma3 0.18–0.24 there — its
//     sliding-window layers live in llama.cpp's separate, pruned SWA
//     cache, whose cell order is not emulated — hence 0.3.
//   - F16: ≤ 7.8e-6 (llama, qwen2, qwen3, qwen3moe — 4.4e-3 before the
//     router rounding —, stories260K), hence 1e-4; phi3 2.6e-3 on the
//     long prompt and gemma3 6.1e-3 on the 5-token prompt, 2.0e-2 on the
//     long one (not explained), hence 5e-3 and 2.5e-2.
//   - F32 (stories260K) 3.0e-3 (not explained), hence 5e-3; BF16 6.0e-2
//     (BF16 products not emulated), hence 6.5e-2.
func defaultTolerance(f *gguf.File, c *Config, promptLen int) float64 {
	switch {
	case !exactPath(f) && c.Gemma && promptLen >= ggmlFATile:
		return 0.3
	case !exactPath(f):
		return 1e-4
	}
	tol := 5e-3
	for _, ti := range f.Tensors {
		switch ti.Type {
		case gguf.BF16:
			return 6.5e-2
		case gguf.F16:
			switch {
			case c.Gemma:
				tol = 2.5e-2
			case c.Arch == "phi3":
				tol = 5e-3
			default:
				tol = 1e-4
			}
		}
	}
	return tol
}

// halfMatrices reports whether f has F16 or BF16 tensors, whose products
// llama.cpp computes on activations rounded to that type.
func halfMatrices(f *gguf.File) bool {
	for _, ti := range f.Tensors {
		if ti.Type == gguf.F16 || ti.Type == gguf.BF16 {
			return true
		}
	}
	return false
}

// exactPath reports whether every matrix of f is computed with float32
// activations on exactly dequantized weights, so that the .f32-math
// reference is a tight check (1e-4 per the zoo README).
func exactPath(f *gguf.File) bool {
	for _, ti := range f.Tensors {
		switch ti.Type {
		case gguf.F32, gguf.F16, gguf.BF16:
		default:
			return false // activations quantized to int8 (kernels/activation.go)
		}
	}
	return true
}

// TestZoo runs every zoo file: it loads (or is refused as unsupported with
// the supported list, never as malformed), and is teacher-forced on
// llama.cpp's tokens twice:
//
//   - against the .f32-math reference with an F32 KV cache, prompt and
//     continuation in chunks of 64: ≤ 1e-4 when the computation is exact
//     in F32, otherwise ≤ 1.0 (the zoo README's int8-activation spread);
//   - against the default reference as llama.cpp ran it: an F16 KV cache,
//     the prompt as one batch returning only its last logits, then one
//     token per step, with the emulations of ggml's flash attention (all
//     three paths), rope cache, F32/F16 products and repacked kernels, so
//     every step takes llama.cpp's path for its shape (defaultTolerance).
//     A quantized file with no F16/BF16 matrix must moreover agree to 1e-4
//     at step 0 of at least one short prompt (all 90 of the 30 such files
//     do, to ≤ 8.6e-6).
//
// Greedy tokens are compared up to the first step whose llama.cpp margin
// is below max(1e-2, twice the prompt's worst |Δ logprob|). The 296-token
// prompt runs only with BULKHEAD_LONG=1.
func TestZoo(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(zooDir, "*.gguf"))
	if len(files) == 0 {
		t.Skipf("zoo absent (%s): zoo comparison skipped", zooDir)
	}
	long := os.Getenv("BULKHEAD_LONG") == "1"
	for _, path := range files {
		stem := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(stem, func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatalf("a valid zoo file does not parse: %v", err)
			}
			defer f.Close()
			// The emulation applies to F16 KV caches only; the F32 runs
			// take the production attention.
			m, err := Load(f, Options{Threads: 2, GGMLFlashAttention: true, GGMLRope: true, GGMLFloatMatMul: true, GGMLRepack: true})
			if err != nil {
				if errors.Is(err, ErrUnsupported) && strings.Contains(err.Error(), "supported:") && !errors.Is(err, ErrMalformed) {
					t.Skipf("not yet supported: %v", err)
				}
				t.Fatalf("load: %v (want success or ErrUnsupported naming what is supported)", err)
			}
			type zooRun struct {
				name string
				ref  *llamaCppReference
				kv   gguf.Type
				tol  func(promptLen int) float64
			}
			// The .f32-math runs had F32 weights (the file dequantized), so
			// they take bulkhead's own products: the emulation of ggml's
			// F16 products would round activations those runs did not.
			mf, err := Load(f, Options{Threads: 2, GGMLRope: true})
			if err != nil {
				t.Fatal(err)
			}
			runs := []zooRun{{"default", readZooRef(t, stem+".reference.json"), gguf.F16,
				func(n int) float64 { return defaultTolerance(f, &m.Config, n) }}}
			if fm := f32MathRef(stem); fm != "" {
				tol := 1.0
				if exactPath(f) {
					tol = 1e-4
					if m.Config.Gemma {
						// ggml's GELU rounds through an F16 table; our
						// emulation of it (gemma.go) leaves 6e-4 on the
						// F16 file, not yet explained below that.
						tol = 1e-3
					}
				}
				runs = append(runs, zooRun{"f32-math", readZooRef(t, fm), gguf.F32, func(int) float64 { return tol }})
			}
			for _, rr := range runs {
				worst, worstLong, agreed, total, short, exact0 := 0.0, 0.0, 0, 0, 0, 0
				for _, r := range rr.ref.Results {
					if len(r.PromptTokens) > 64 && !long {
						continue
					}
					tokens := append(append([]int32(nil), r.PromptTokens...), r.GeneratedTokens...)
					kv, err := NewSimpleKV(&m.Config, 1, 512, rr.kv)
					if err != nil {
						t.Fatal(err)
					}
					var all [][]float32
					if rr.kv == gguf.F16 {
						all = runPromptThenDecode(t, m, kv, []int32{0}, tokens, len(r.PromptTokens))
					} else {
						all = runPrompt(t, mf, kv, []int32{0}, tokens, 64)
					}
					// Teacher-forced worst difference first: a greedy token may
					// differ only where llama.cpp's margin is within twice it.
					pw, step0 := 0.0, 0.0
					for j, st := range r.Steps {
						logits := all[len(r.PromptTokens)-1+j]
						for _, top := range st.Top {
							d := math.Abs(logSoftmaxAt(logits, top.ID)[0] - top.Logprob)
							pw = math.Max(pw, d)
							if j == 0 {
								step0 = math.Max(step0, d)
							}
						}
					}
					if len(r.PromptTokens) < ggmlFATile {
						worst = math.Max(worst, pw)
					} else {
						worstLong = math.Max(worstLong, pw)
					}
					if tol := rr.tol(len(r.PromptTokens)); pw > tol {
						t.Errorf("%s %q (%d prompt tokens): worst |Δ logprob| %.3g > %g", rr.name, r.Prompt, len(r.PromptTokens), pw, tol)
					}
					if len(r.PromptTokens) < ggmlFATile {
						short++
						if step0 <= 1e-4 {
							exact0++
						}
					}
					for j, st := range r.Steps {
						if st.Margin < math.Max(1e-2, 2*pw) {
							break
						}
						logits := all[len(r.PromptTokens)-1+j]
						total++
						if argmax(logits) != r.GeneratedTokens[j] {
							t.Errorf("%s %q step %d: greedy token %d, llama.cpp %d (margin %.3g, our worst |Δ| %.3g)", rr.name, r.Prompt, j, argmax(logits), r.GeneratedTokens[j], st.Margin, pw)
							break
						}
						agreed++
					}
				}
				long := "not run"
				if worstLong > 0 {
					long = fmt.Sprintf("%.3g", worstLong)
				}
				t.Logf("ZOO %s vs %s: tokens agreed %d/%d, worst |Δ logprob| %.3g on short prompts, %s on the long one, step 0 within 1e-4 on %d/%d short prompts (kernels %s)", stem, rr.name, agreed, total, worst, long, exact0, short, kernels.Implementation())
				if rr.name == "default" && !exactPath(f) && !halfMatrices(f) && short > 0 && exact0 == 0 {
					t.Errorf("default: step 0 within 1e-4 on none of %d short prompts (want at least one: ggml's one-chunk attention emulated op for op)", short)
				}
			}
		})
	}
}
