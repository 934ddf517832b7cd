package audit

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Phase names which part of the audit sent a probe.
type Phase string

const (
	PhaseSanity   Phase = "sanity"
	PhaseBoundary Phase = "boundary"
	PhaseCliff    Phase = "cliff"
	PhaseTenants  Phase = "tenants"
	// PhaseDiscover probes find the effective context by bisection.
	PhaseDiscover Phase = "discover"
	// PhasePressure probes fill the server's KV pool.
	PhasePressure Phase = "pressure"
	// PhaseTiming probes time the prefix cache across tenants.
	PhaseTiming Phase = "timing"
)

// ProbeResult is one request and its verdict.
type ProbeResult struct {
	ID     int   `json:"id"`
	Phase  Phase `json:"phase"`
	Tenant int   `json:"tenant"`
	// Target is the prompt length asked for (0: the shortest prompt the
	// layout allows); Tokens is the length built, as counted by the
	// report's Tokenizer.
	Target       int      `json:"target_tokens"`
	Tokens       int      `json:"prompt_tokens"`
	Fit          string   `json:"fit"`
	Position     Position `json:"canary_position"`
	Stream       bool     `json:"stream"`
	MaxTokens    int      `json:"max_tokens,omitempty"` // 0: omitted from the request
	Canary       string   `json:"canary"`
	Status       int      `json:"status"`
	Outcome      Outcome  `json:"outcome"`
	FinishReason string   `json:"finish_reason,omitempty"`
	Output       string   `json:"output,omitempty"`
	Verdict      Verdict  `json:"verdict"`
	Reason       string   `json:"reason"`
	// LeakedFrom lists the probes whose canary fragments appeared in this
	// probe's output.
	LeakedFrom []LeakSource `json:"leaked_from,omitempty"`
}

// LeakSource names a probe whose canary leaked.
type LeakSource struct {
	Probe       int  `json:"probe"`
	Tenant      int  `json:"tenant"`
	CrossTenant bool `json:"cross_tenant"`
}

// Cliff brackets the length above which the server answers 200 but stops
// retrieving the canary, below the advertised maximum.
type Cliff struct {
	LastGood int `json:"last_good_tokens"`
	FirstBad int `json:"first_bad_tokens"`
}

// Counts totals the verdicts.
type Counts struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Leak int `json:"leak"`
}

// Report is the audit's result.
type Report struct {
	URL              string `json:"url"`
	Model            string `json:"model"`
	Style            Style  `json:"prompt_style"`
	MaxContext       int    `json:"max_context"`
	MaxContextSource string `json:"max_context_source"`
	Tokenizer        string `json:"tokenizer"`
	// Claims are the context lengths advertised or passed; Effective is
	// what probing found, against which every probe is judged.
	Claims    []ContextClaim `json:"context_claims,omitempty"`
	Effective *Effective     `json:"effective_context,omitempty"`
	// Tenants counts real tenants (distinct keys the server tells apart);
	// Sessions counts the identities the audit sent requests as.
	Tenants  int           `json:"tenants"`
	Sessions int           `json:"sessions"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Counts   Counts        `json:"counts"`
	Cliff    *Cliff        `json:"cliff,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	// Findings are what the audit learnt, most severe first, each with
	// its evidence.
	Findings []Finding `json:"findings"`
	Pressure *Pressure `json:"pressure,omitempty"`
	Timing   *Timing   `json:"prefix_cache_timing,omitempty"`
	// Incomplete says why the audit stopped before its last phase; the
	// probes that ran are still reported.
	Incomplete string        `json:"incomplete,omitempty"`
	Probes     []ProbeResult `json:"probes"`
}

// Failed reports whether any probe failed or leaked.
func (r *Report) Failed() bool {
	for _, f := range r.Findings {
		if f.Severity.fails() {
			return true
		}
	}
	return r.Counts.Fail > 0 || r.Counts.Leak > 0
}

func (r *Report) count() {
	r.Counts = Counts{}
	for _, p := range r.Probes {
		switch p.Verdict {
		case Pass:
			r.Counts.Pass++
		case Warn:
			r.Counts.Warn++
		case Fail:
			r.Counts.Fail++
		case Leak:
			r.Counts.Leak++
		}
	}
}

// WriteSummary writes the human summary: the setup, every probe that did
// not pass, and the overall result.
func (r *Report) WriteSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "bulkhead audit of %s (model %q, %s prompts)\n", r.URL, r.Model, r.Style)
	for _, c := range r.Claims {
		fmt.Fprintf(&b, "  claimed context:    %d tokens (%s)\n", c.Tokens, c.Source)
	}
	if e := r.Effective; e != nil {
		if e.Unbounded {
			fmt.Fprintf(&b, "  effective context:  at least %d tokens (every length up to 4x the claim was answered)\n", e.Tokens)
		} else {
			fmt.Fprintf(&b, "  effective context:  %d tokens (longest answered prompt %d, shortest refused %d)\n", e.Tokens, e.LongestAccepted, e.ShortestRefused)
		}
	}
	fmt.Fprintf(&b, "  prompt lengths:     %s\n", r.Tokenizer)
	fmt.Fprintf(&b, "  tenants:            %d real, %d sessions\n", r.Tenants, r.Sessions)
	fmt.Fprintf(&b, "  probes:             %d in %s\n", len(r.Probes), r.Duration.Round(time.Millisecond))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if r.Incomplete != "" {
		fmt.Fprintf(&b, "  stopped early: %s\n", r.Incomplete)
	}
	if r.Cliff != nil {
		fmt.Fprintf(&b, "\nCAPACITY CLIFF: answers stay 200 but the canary is lost between %d and %d tokens (advertised %d)\n",
			r.Cliff.LastGood, r.Cliff.FirstBad, r.MaxContext)
	}
	if len(r.Findings) > 0 {
		b.WriteString("\nFINDINGS\n")
	}
	for _, f := range r.Findings {
		writeFinding(&b, f)
	}
	// Leaks first: they are the reason the audit exists.
	if r.Counts.Pass < len(r.Probes) {
		b.WriteString("\n")
	}
	for _, v := range []Verdict{Leak, Fail, Warn} {
		for _, p := range r.Probes {
			if p.Verdict == v {
				writeProbe(&b, p)
			}
		}
	}
	failing := 0
	for _, f := range r.Findings {
		if f.Severity.fails() {
			failing++
		}
	}
	if failing > 0 {
		fmt.Fprintf(&b, "\n%d findings fail the audit (critical or high)\n", failing)
	}
	result := "PASS"
	switch {
	case r.Failed():
		result = "FAIL"
	case r.Incomplete != "":
		result = "INCOMPLETE"
	}
	fmt.Fprintf(&b, "\n%s: %d pass, %d warn, %d fail, %d leak\n", result, r.Counts.Pass, r.Counts.Warn, r.Counts.Fail, r.Counts.Leak)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFinding writes a finding, what it means and its evidence.
func writeFinding(b *strings.Builder, f Finding) {
	fmt.Fprintf(b, "  [%s] %s: %s\n", strings.ToUpper(string(f.Severity)), f.Kind, f.Title)
	fmt.Fprintf(b, "      meaning: %s\n", f.Meaning)
	for _, e := range f.Evidence {
		fmt.Fprintf(b, "      evidence: %s", e.Request)
		if e.Status != 0 {
			fmt.Fprintf(b, " -> status %d", e.Status)
		}
		if e.FinishReason != "" {
			fmt.Fprintf(b, ", finish_reason %s", e.FinishReason)
		}
		if e.Response != "" {
			fmt.Fprintf(b, ": %q", e.Response)
		}
		b.WriteString("\n")
	}
}

// writeProbe writes one probe that did not pass, and where its leaked
// canaries came from.
func writeProbe(b *strings.Builder, p ProbeResult) {
	mode := "non-stream"
	if p.Stream {
		mode = "stream"
	}
	fmt.Fprintf(b, "%-4s #%d %s tenant %d, %d tokens (%s), canary at %s, %s: %s\n",
		p.Verdict, p.ID, p.Phase, p.Tenant, p.Tokens, p.Fit, p.Position, mode, p.Reason)
	for _, s := range p.LeakedFrom {
		kind := "same tenant, another request"
		if s.CrossTenant {
			kind = "another tenant"
		}
		fmt.Fprintf(b, "       canary of probe #%d (tenant %d, %s) found in the output\n", s.Probe, s.Tenant, kind)
	}
}
