package loadgen

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Latency summarises a set of durations in milliseconds.
type Latency struct {
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	N    int     `json:"n"`
}

// Report is the outcome of a run.
type Report struct {
	Model              string         `json:"model"`
	Stream             bool           `json:"stream"`
	Concurrency        int            `json:"concurrency"`
	InputLen           int            `json:"input_len"`
	OutputLen          int            `json:"output_len"`
	PromptsCalibrated  bool           `json:"prompts_calibrated"` // lengths measured with /tokenize
	Requests           int            `json:"requests"`
	Completed          int            `json:"completed"`
	Failed             int            `json:"failed"`
	ServerFailures     int            `json:"failed_server"`    // HTTP errors, error events, truncated streams
	TransportFailures  int            `json:"failed_transport"` // connection refused, reset, timed out
	Retries            int            `json:"retries"`          // resends after a reused connection closed unanswered
	Errors             map[string]int `json:"errors,omitempty"` // message → count
	DurationSeconds    float64        `json:"duration_s"`
	RequestsPerSecond  float64        `json:"requests_per_s"`
	InputTokens        int            `json:"input_tokens"`
	OutputTokens       int            `json:"output_tokens"`
	OutputTokensPerSec float64        `json:"output_tokens_per_s"`
	TotalTokensPerSec  float64        `json:"total_tokens_per_s"`
	TTFT               Latency        `json:"ttft"`
	ITL                Latency        `json:"itl"`
	E2E                Latency        `json:"e2e_latency"`
}

// idPattern matches request ids and similar tokens, which would otherwise
// make every error message distinct.
var idPattern = regexp.MustCompile(`[0-9A-Za-z_-]*[0-9a-f]{16,}`)

// maxErrorKinds bounds Report.Errors so a flood of distinct messages stays readable.
const maxErrorKinds = 20

func summarize(cfg Config, model string, calibrated bool, results []result, elapsed time.Duration) *Report {
	r := &Report{Model: model, Stream: cfg.Stream, Concurrency: cfg.Concurrency, InputLen: cfg.InputLen,
		OutputLen: cfg.OutputLen, PromptsCalibrated: calibrated, Requests: cfg.Requests, DurationSeconds: elapsed.Seconds()}
	var ttft, itl, e2e []time.Duration
	for _, res := range results {
		r.Retries += res.retries
		if res.err != nil {
			r.Failed++
			if res.transport {
				r.TransportFailures++
			} else {
				r.ServerFailures++
			}
			if r.Errors == nil {
				r.Errors = map[string]int{}
			}
			msg := idPattern.ReplaceAllString(res.err.Error(), "<id>")
			if _, ok := r.Errors[msg]; !ok && len(r.Errors) >= maxErrorKinds {
				msg = "other errors"
			}
			r.Errors[msg]++
			continue
		}
		r.Completed++
		r.InputTokens += res.promptTokens
		r.OutputTokens += res.outputTokens
		ttft = append(ttft, res.ttft)
		itl = append(itl, res.itl...)
		e2e = append(e2e, res.latency)
	}
	if s := elapsed.Seconds(); s > 0 {
		r.RequestsPerSecond = float64(r.Completed) / s
		r.OutputTokensPerSec = float64(r.OutputTokens) / s
		r.TotalTokensPerSec = float64(r.InputTokens+r.OutputTokens) / s
	}
	r.TTFT, r.ITL, r.E2E = summarizeLatency(ttft), summarizeLatency(itl), summarizeLatency(e2e)
	return r
}

func summarizeLatency(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	ms := make([]float64, len(ds))
	sum := 0.0
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	sort.Float64s(ms)
	return Latency{Mean: sum / float64(len(ms)), P50: percentile(ms, 50), P90: percentile(ms, 90), P99: percentile(ms, 99), N: len(ms)}
}

// percentile interpolates linearly between the closest ranks of sorted.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(pos)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// JSON returns the report as indented JSON.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// String renders the report for people.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "============ Serving Benchmark Result ============\n")
	fmt.Fprintf(&b, "%-34s %s\n", "Model:", r.Model)
	fmt.Fprintf(&b, "%-34s %d (stream=%v)\n", "Concurrency:", r.Concurrency, r.Stream)
	calib := "words ≈ tokens"
	if r.PromptsCalibrated {
		calib = "measured with /tokenize"
	}
	fmt.Fprintf(&b, "%-34s %d in / %d out (%s)\n", "Tokens per request (target):", r.InputLen, r.OutputLen, calib)
	fmt.Fprintf(&b, "%-34s %d of %d\n", "Successful requests:", r.Completed, r.Requests)
	fmt.Fprintf(&b, "%-34s %d (server %d, transport %d)\n", "Failed requests:", r.Failed, r.ServerFailures, r.TransportFailures)
	fmt.Fprintf(&b, "%-34s %d\n", "Resent after idle-connection close:", r.Retries)
	fmt.Fprintf(&b, "%-34s %.2f\n", "Benchmark duration (s):", r.DurationSeconds)
	fmt.Fprintf(&b, "%-34s %d\n", "Total input tokens:", r.InputTokens)
	fmt.Fprintf(&b, "%-34s %d\n", "Total generated tokens:", r.OutputTokens)
	fmt.Fprintf(&b, "%-34s %.2f\n", "Request throughput (req/s):", r.RequestsPerSecond)
	fmt.Fprintf(&b, "%-34s %.2f\n", "Output token throughput (tok/s):", r.OutputTokensPerSec)
	fmt.Fprintf(&b, "%-34s %.2f\n", "Total token throughput (tok/s):", r.TotalTokensPerSec)
	for _, l := range []struct {
		name string
		v    Latency
	}{{"Time to First Token", r.TTFT}, {"Inter-token Latency", r.ITL}, {"End-to-end Latency", r.E2E}} {
		fmt.Fprintf(&b, "---------------%s---------------\n", l.name)
		fmt.Fprintf(&b, "%-34s %.2f\n%-34s %.2f\n%-34s %.2f\n%-34s %.2f\n",
			"Mean (ms):", l.v.Mean, "P50 (ms):", l.v.P50, "P90 (ms):", l.v.P90, "P99 (ms):", l.v.P99)
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "---------------Errors---------------\n")
		msgs := make([]string, 0, len(r.Errors))
		for m := range r.Errors {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		for _, m := range msgs {
			fmt.Fprintf(&b, "%6d  %s\n", r.Errors[m], m)
		}
	}
	b.WriteString("==================================================\n")
	return b.String()
}
