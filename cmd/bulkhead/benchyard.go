package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/bulkhead-llm/bulkhead/internal/kernels"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// yardsticks are the machine's limits measured by tiny probes in the same
// run as bench kernels, so its figures can be read as fractions of them
// whatever else the host is doing.
type yardsticks struct {
	ReadGBPerS float64 `json:"probe_read_gb_per_s"`
	FMAGFlops  float64 `json:"probe_fma_gflop_per_s"`
	// ReadGBPerCPUs is the read probe per CPU-second of all its threads:
	// on a machine shared with other work, wall-clock figures fall with
	// everyone else's load, this much less (decode's counterpart is
	// DecodeGBPerCPUs).
	ReadGBPerCPUs float64 `json:"probe_read_gb_per_cpu_s"`
	// WeightsReadGBPerS is the same plain read over the model's own weight
	// pages, one pass after every probeEvery decode steps, so that it sees
	// the memory decode sees when decode sees it. Shared hosts change
	// speed under a run: the Zen 4 host of issue 12 read at 50–62 GB/s for
	// about four seconds after an idle spell, then at 28–35, so a probe
	// taken before or after decode may time another machine.
	WeightsReadGBPerS float64 `json:"probe_weights_read_gb_per_s,omitempty"`
}

// probeEvery is how many decode steps run between weights-read passes.
const probeEvery = 8

// weightsProbe times plain read passes over the model's weights between
// decode steps (the passes are left out of decode's time).
type weightsProbe struct {
	pool    *kernels.Pool
	weights []byte
	bytes   float64
	secs    float64
}

func newWeightsProbe(threads int, weights []byte) *weightsProbe {
	return &weightsProbe{pool: kernels.NewPool(threads), weights: weights}
}

func (w *weightsProbe) pass() {
	if bw := kernels.ReadMappedBandwidth(w.pool, w.weights, 1); bw > 0 {
		w.bytes += float64(len(w.weights))
		w.secs += float64(len(w.weights)) / bw
	}
}

// gbPerS is the mean rate of the passes so far (0 before any).
func (w *weightsProbe) gbPerS() float64 {
	if w.secs == 0 {
		return 0
	}
	return w.bytes / w.secs / 1e9
}

func (w *weightsProbe) close() { w.pool.Close() }

// measureYardsticks streams a buffer of size bytes (far past any
// last-level cache) and spins the FMA units, on every thread of a pool the
// size of the model's.
func measureYardsticks(threads int, size int64) yardsticks {
	p := kernels.NewPool(threads)
	defer p.Close()
	buf := make([]byte, size)
	kernels.ReadBandwidth(p, buf, 1) // faults the pages in
	const reps = 3
	cpu := processCPU()
	y := yardsticks{ReadGBPerS: kernels.ReadBandwidth(p, buf, reps) / 1e9}
	if d := processCPU() - cpu; d > 0 {
		// Each pass reads threads equal shares of at most size bytes.
		y.ReadGBPerCPUs = float64(reps) * float64(size) / d.Seconds() / 1e9
	}
	y.FMAGFlops = kernels.FMAPeak(p, 3) / 1e9
	return y
}

// probeBytes is the read probe's buffer: four times the weights (so it is
// as far out of cache as decode is), between 64 MiB and 1 GiB, unless
// --probe-mb says otherwise.
func probeBytes(weights int64, mb int) int64 {
	if mb > 0 {
		return int64(mb) << 20
	}
	return min(max(4*weights, 64<<20), 1<<30)
}

// matmulFlopsPerToken is 2 × the weight elements one token multiplies in
// the layers' matrix products (attention scores and the output projection
// left out), the work prefill spends its FMA units on.
func matmulFlopsPerToken(c *model.Config) float64 {
	e, q, kv := float64(c.Embd), float64(c.QDim()), float64(c.KVDim())
	perLayer := e*q + 2*e*kv + q*e + 3*e*float64(c.FF)
	return 2 * float64(c.Layers) * perLayer
}

// llamaBenchRow is the part of one llama-bench JSON record (-o json) that
// bench kernels compares against.
type llamaBenchRow struct {
	NPrompt int     `json:"n_prompt"`
	NGen    int     `json:"n_gen"`
	AvgTS   float64 `json:"avg_ts"`
	Threads int     `json:"n_threads"`
	Model   string  `json:"model_type"`
}

// comparison is bulkhead's figure over llama.cpp's for one test.
type comparison struct {
	Test     string  `json:"test"`
	Llama    float64 `json:"llama_tokens_per_s"`
	Bulkhead float64 `json:"bulkhead_tokens_per_s"`
	Ratio    float64 `json:"ratio"`
	Note     string  `json:"note,omitempty"`
}

// compareLlamaBench reads a llama-bench JSON file (an array of records, or
// JSON lines) and pairs its pp and tg tests with this run's.
func compareLlamaBench(path string, res *kernelsResult) ([]comparison, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []llamaBenchRow
	if err := json.Unmarshal(data, &rows); err != nil {
		rows = rows[:0]
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var r llamaBenchRow
			if err := dec.Decode(&r); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: not llama-bench JSON: %w", path, err)
			}
			rows = append(rows, r)
		}
	}
	var out []comparison
	for _, r := range rows {
		if r.AvgTS <= 0 {
			continue
		}
		c := comparison{Llama: r.AvgTS}
		switch {
		case r.NPrompt > 0 && r.NGen == 0:
			c.Test, c.Bulkhead = fmt.Sprintf("pp%d", r.NPrompt), res.PrefillTokensPerS
			if r.NPrompt != res.PromptLen {
				c.Note = fmt.Sprintf("bulkhead ran pp%d", res.PromptLen)
			}
		case r.NGen > 0 && r.NPrompt == 0:
			c.Test, c.Bulkhead = fmt.Sprintf("tg%d", r.NGen), res.DecodeTokensPerS
			if r.NGen != res.GenLen {
				c.Note = fmt.Sprintf("bulkhead ran tg%d", res.GenLen)
			}
		default:
			continue
		}
		if r.Threads != 0 && r.Threads != res.Threads {
			c.Note = joinNote(c.Note, fmt.Sprintf("llama.cpp used %d threads", r.Threads))
		}
		c.Ratio = c.Bulkhead / c.Llama
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no pp or tg records with avg_ts", path)
	}
	return out, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
