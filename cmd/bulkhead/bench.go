package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/progress"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kernels"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

const benchUsage = `usage: bulkhead bench kernels|serve [flags]

benchmarks:
  kernels   prefill and decode speed of a model file, with same-run read-bandwidth
            and FMA probes as yardsticks
  serve     load generator against any OpenAI-compatible server (TTFT, ITL, e2e)

run "bulkhead bench kernels -h" or "bulkhead bench serve -h" for their flags

environment:
  BULKHEAD_KERNELS=avx512|avx2|ref  force a CPU kernel set instead of the best
            this CPU supports (bench kernels prints which ran); any command
  BULKHEAD_ROW_STREAMS=1|2  weight streams per thread in one-token decode rows
            (default 2 on Intel CPUs, 1 elsewhere; results keep their bits)`

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return invalidUsage(errors.New(benchUsage))
	}
	switch args[0] {
	case "kernels":
		return runBenchKernels(args[1:], stdout, stderr)
	case "serve":
		return runBenchServe(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, benchUsage)
		return nil
	}
	return invalidUsage(fmt.Errorf("unknown benchmark %q: want kernels or serve (bulkhead bench -h)", args[0]))
}

// kernelsResult is the --json output of bench kernels.
type kernelsResult struct {
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
	DecodeTokensPerS  float64 `json:"decode_tokens_per_s"`
	DecodeGBPerS      float64 `json:"decode_weight_gb_per_s"`
	PromptLen         int     `json:"prompt_len"`
	GenLen            int     `json:"gen_len"`
	DecodeSeqs        int     `json:"decode_seqs"`
	Threads           int     `json:"threads"`
	Reps              int     `json:"reps"`
	// CPU seconds (all threads) per token: on a busy machine wall-clock
	// speed understates the code; threads / these is the speed it would
	// reach with the cores to itself.
	PrefillCPUPerToken float64 `json:"prefill_cpu_s_per_token"`
	DecodeCPUPerToken  float64 `json:"decode_cpu_s_per_token"`

	// Same-run yardsticks (absent with --no-probe) and the results as
	// fractions of them.
	Kernels string `json:"kernels"`
	// Which kernels ran per weight type, and the decode rows' weight
	// streams per thread (kernels.RowStreams, BULKHEAD_ROW_STREAMS).
	KernelVariants string `json:"kernel_variants"`
	RowStreams     int    `json:"row_streams"`
	*yardsticks
	DecodeReadFraction float64 `json:"decode_fraction_of_read_probe,omitempty"`
	// The same per CPU-second (all threads) of decode and of the probe.
	DecodeGBPerCPUs       float64 `json:"decode_weight_gb_per_cpu_s"`
	DecodeReadCPUFraction float64 `json:"decode_fraction_of_read_probe_per_cpu_s,omitempty"`
	// Decode over the plain read of the weights' own pages.
	DecodeWeightsReadFraction float64      `json:"decode_fraction_of_weights_read_probe,omitempty"`
	PrefillGFlops             float64      `json:"prefill_matmul_gflop_per_s"`
	PrefillFMAFraction        float64      `json:"prefill_fraction_of_fma_probe,omitempty"`
	Compare                   []comparison `json:"compare,omitempty"`
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runBenchKernels measures the forward pass like llama-bench's pp/tg
// tests: one prompt of --prompt-len random tokens in a single forward
// (matrix–matrix), and --gen-len single-token decode steps of a sequence
// that starts empty (llama-bench's tg also starts from an empty context).
func runBenchKernels(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench kernels", "--model FILE [flags]", stderr)
	modelPath := fs.String("model", "", "GGUF model file (required)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	promptLen := fs.Int("prompt-len", 512, "prompt tokens prefilled in one forward")
	genLen := fs.Int("gen-len", 128, "decode steps of one token")
	decodeSeqs := fs.Int("decode-seqs", 1, "sequences per decode step, one token each (weights are read once per step)")
	reps := fs.Int("reps", 1, "repetitions; the mean time is reported")
	kvType := fs.String("kv-type", "f16", "KV cache element type: f16 or f32")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	noProbe := fs.Bool("no-probe", false, "skip the read-bandwidth and FMA probes")
	probeMB := fs.Int("probe-mb", 0, "read probe buffer in MiB (default: 4× the weights, 64–1024)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed passes to FILE")
	compareJSON := fs.String("compare-json", "", "llama-bench JSON output (-o json) to print ratios against")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *modelPath == "" {
		return invalidUsage(errors.New("--model FILE is required"))
	}
	if *promptLen < 1 || *genLen < 1 || *reps < 1 || *decodeSeqs < 1 {
		return invalidUsage(fmt.Errorf("--prompt-len %d, --gen-len %d, --reps %d and --decode-seqs %d must be ≥ 1",
			*promptLen, *genLen, *reps, *decodeSeqs))
	}
	kvT, err := parseKVType(*kvType)
	if err != nil {
		return invalidUsage(err)
	}
	lm, err := loader.Load(loader.Options{Path: *modelPath, Threads: *threads, Progress: stderr})
	if err != nil {
		return err
	}
	defer lm.Close()
	m := lm.Model
	total := max(*promptLen, *genLen)
	const pageSize = 16
	// Each decode sequence has its own pages; the first also takes the prompt.
	seqPages := (total + pageSize - 1) / pageSize
	kv, err := model.NewSimpleKV(&m.Config, seqPages**decodeSeqs, pageSize, kvT)
	if err != nil {
		return err
	}
	pages := make([]int32, kv.Pages())
	for i := range pages {
		pages[i] = int32(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := make([]int32, total)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(m.Config.Vocab))
	}
	// Warm-up: touch every weight page once so the first timing does not
	// include page faults of the memory map.
	if _, err := m.Forward(kv, []model.Seq{{Tokens: tokens[:min(16, *promptLen)], Pages: pages}}); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var wp *weightsProbe
	if !*noProbe {
		wp = newWeightsProbe(m.Threads(), lm.File.DataSection())
		defer wp.close()
	}
	var prefill, decode, prefillCPU, decodeCPU time.Duration
	rep := progress.New(stderr, "bench", int64(*reps*(*promptLen+*genLen)), "tokens")
	for r := 0; r < *reps; r++ {
		start, cpu := time.Now(), processCPU()
		if _, err := m.Forward(kv, []model.Seq{{Tokens: tokens[:*promptLen], Pages: pages}}); err != nil {
			return err
		}
		prefill += time.Since(start)
		prefillCPU += processCPU() - cpu
		rep.Add(int64(*promptLen))
		start, cpu = time.Now(), processCPU()
		seqs := make([]model.Seq, *decodeSeqs)
		for i := 0; i < *genLen; i++ {
			for s := range seqs {
				j := (i + s) % total
				seqs[s] = model.Seq{Tokens: tokens[j : j+1], Pos: i, Pages: pages[s*seqPages : (s+1)*seqPages]}
			}
			if _, err := m.Forward(kv, seqs); err != nil {
				return err
			}
			rep.Add(1)
			// A pass after every probeEvery steps, and after the last
			// step of a run too short for one.
			if wp != nil && (i%probeEvery == probeEvery-1 || i == *genLen-1 && wp.secs == 0) {
				decode += time.Since(start)
				decodeCPU += processCPU() - cpu
				wp.pass()
				start, cpu = time.Now(), processCPU()
			}
		}
		decode += time.Since(start)
		decodeCPU += processCPU() - cpu
		rep.Step("rep %d/%d done", r+1, *reps)
	}
	rep.Done()
	res := kernelsResult{
		PrefillTokensPerS: float64(*promptLen**reps) / prefill.Seconds(),
		DecodeTokensPerS:  float64(*genLen**reps**decodeSeqs) / decode.Seconds(),
		PromptLen:         *promptLen, GenLen: *genLen, DecodeSeqs: *decodeSeqs, Threads: m.Threads(), Reps: *reps,
	}
	// The weights are read once per decode step, whatever its sequences.
	res.DecodeGBPerS = float64(m.WeightBytes()) * float64(*genLen**reps) / decode.Seconds() / 1e9
	res.PrefillCPUPerToken = prefillCPU.Seconds() / float64(*promptLen**reps)
	res.DecodeCPUPerToken = decodeCPU.Seconds() / float64(*genLen**reps**decodeSeqs)
	if decodeCPU > 0 {
		res.DecodeGBPerCPUs = float64(m.WeightBytes()) * float64(*genLen**reps) / decodeCPU.Seconds() / 1e9
	}
	res.Kernels = kernels.Implementation()
	res.KernelVariants, res.RowStreams = kernels.Variants(), kernels.RowStreams()
	res.PrefillGFlops = matmulFlopsPerToken(&m.Config) * res.PrefillTokensPerS / 1e9
	if !*noProbe {
		y := measureYardsticks(m.Threads(), probeBytes(m.WeightBytes(), *probeMB))
		y.WeightsReadGBPerS = wp.gbPerS()
		res.yardsticks = &y
		if y.WeightsReadGBPerS > 0 {
			res.DecodeWeightsReadFraction = res.DecodeGBPerS / y.WeightsReadGBPerS
		}
		if y.ReadGBPerS > 0 {
			res.DecodeReadFraction = res.DecodeGBPerS / y.ReadGBPerS
		}
		if y.ReadGBPerCPUs > 0 {
			res.DecodeReadCPUFraction = res.DecodeGBPerCPUs / y.ReadGBPerCPUs
		}
		if y.FMAGFlops > 0 {
			res.PrefillFMAFraction = res.PrefillGFlops / y.FMAGFlops
		}
	}
	if *compareJSON != "" {
		if res.Compare, err = compareLlamaBench(*compareJSON, &res); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "model        %s (%s, %d layers, n_embd %d)\n", *modelPath, m.Config.Arch, m.Config.Layers, m.Config.Embd)
	fmt.Fprintf(stdout, "threads      %d\n", m.Threads())
	fmt.Fprintf(stdout, "pp%-4d       %.1f tokens/s\n", *promptLen, res.PrefillTokensPerS)
	fmt.Fprintf(stdout, "tg%-4d       %.1f tokens/s (%d sequence(s) per step)\n", *genLen, res.DecodeTokensPerS, *decodeSeqs)
	fmt.Fprintf(stdout, "decode reads %.1f MB of weights per step: %.2f GB/s\n", float64(m.WeightBytes())/1e6, res.DecodeGBPerS)
	fmt.Fprintf(stdout, "cpu time     prefill %.2f ms/token, decode %.2f ms/token (all threads)\n",
		1e3*res.PrefillCPUPerToken, 1e3*res.DecodeCPUPerToken)
	fmt.Fprintf(stdout, "kernels      %s (%s)\n", res.Kernels, kernels.Variants())
	fmt.Fprintf(stdout, "prefill      %.1f GFLOP/s in matrix products\n", res.PrefillGFlops)
	if y := res.yardsticks; y != nil {
		fmt.Fprintf(stdout, "probe read   %.2f GB/s: decode streams weights at %.2f of it\n", y.ReadGBPerS, res.DecodeReadFraction)
		fmt.Fprintf(stdout, "per cpu-s    probe %.2f GB, decode %.2f GB: %.2f of it (steadier on a shared machine)\n",
			y.ReadGBPerCPUs, res.DecodeGBPerCPUs, res.DecodeReadCPUFraction)
		if y.WeightsReadGBPerS > 0 {
			fmt.Fprintf(stdout, "probe weights %.2f GB/s, the same read over the weights' own pages between decode steps: decode at %.2f of it\n",
				y.WeightsReadGBPerS, res.DecodeWeightsReadFraction)
		}
		fmt.Fprintf(stdout, "probe fma    %.1f GFLOP/s (%d-bit): prefill runs at %.2f of it\n", y.FMAGFlops, kernels.FMAProbeBits(), res.PrefillFMAFraction)
	}
	for _, c := range res.Compare {
		fmt.Fprintf(stdout, "vs llama.cpp %-6s %.1f / %.1f tokens/s = %.2f", c.Test, c.Bulkhead, c.Llama, c.Ratio)
		if c.Note != "" {
			fmt.Fprintf(stdout, " (%s)", c.Note)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

func parseKVType(s string) (gguf.Type, error) {
	switch s {
	case "f16":
		return gguf.F16, nil
	case "f32":
		return gguf.F32, nil
	}
	return 0, fmt.Errorf("--kv-type %q: want f16 or f32", s)
}
