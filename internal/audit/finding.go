package audit

import (
	"fmt"
	"slices"
	"strings"
)

// Severity ranks a finding by what it means for an operator. Critical and
// high findings fail the audit; medium and info ones are reported and do
// not.
type Severity string

const (
	// Critical: one tenant's data reached another (a leak).
	Critical Severity = "critical"
	// High: the server answers wrongly, or does not do what it (or the
	// operator) claims: wrong answers, silent truncation, a context that
	// differs from the advertised one, a prefix cache shared across tenants.
	High Severity = "high"
	// Medium: something was not or could not be tested.
	Medium Severity = "medium"
	// Info: how the audit ran and what it measured.
	Info Severity = "info"
)

// fails reports whether a finding of this severity fails the audit.
func (s Severity) fails() bool { return s == Critical || s == High }

// Evidence is one request and what came back, enough to reproduce it.
type Evidence struct {
	Probe        int    `json:"probe,omitempty"`
	Request      string `json:"request"`
	Status       int    `json:"status,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	Response     string `json:"response,omitempty"`
}

// Finding is one thing the audit learnt about the server.
type Finding struct {
	Kind     string     `json:"kind"`
	Severity Severity   `json:"severity"`
	Title    string     `json:"title"`
	Meaning  string     `json:"meaning"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// maxEvidence bounds the requests quoted per finding; the probes list has
// the rest.
const maxEvidence = 5

// evidenceOf describes a probe as a request and its answer.
func evidenceOf(p ProbeResult) Evidence {
	mode := ""
	if p.Stream {
		mode = ", stream"
	}
	mt := "max_tokens omitted"
	if p.MaxTokens > 0 {
		mt = fmt.Sprintf("max_tokens %d", p.MaxTokens)
	}
	resp := p.Output
	if resp == "" && p.Reason != "" {
		resp = p.Reason
	}
	return Evidence{
		Probe:        p.ID,
		Request:      fmt.Sprintf("probe #%d (%s, tenant %d): %d-token prompt, canary %q at %s, %s%s", p.ID, p.Phase, p.Tenant, p.Tokens, p.Canary, p.Position, mt, mode),
		Status:       p.Status,
		FinishReason: p.FinishReason,
		Response:     clip(resp),
	}
}

// probeFindings groups the probes that did not pass into findings.
func probeFindings(probes []ProbeResult) []Finding {
	type group struct {
		f     Finding
		count int
	}
	var order []string
	groups := map[string]*group{}
	add := func(kind string, sev Severity, title, meaning string, p ProbeResult) {
		g := groups[kind]
		if g == nil {
			g = &group{f: Finding{Kind: kind, Severity: sev, Title: title, Meaning: meaning}}
			groups[kind] = g
			order = append(order, kind)
		}
		g.count++
		if len(g.f.Evidence) < maxEvidence {
			g.f.Evidence = append(g.f.Evidence, evidenceOf(p))
		}
	}
	for _, p := range probes {
		switch {
		case p.Verdict == Leak && crossTenant(p):
			add("leak-cross-tenant", Critical, "another tenant's canary in an answer",
				"a request read KV state another tenant wrote: the server leaks conversations between tenants", p)
		case p.Verdict == Leak:
			add("leak", Critical, "another request's canary in an answer",
				"a request read KV state it did not write; with more tenants this is a cross-tenant leak", p)
		case p.Verdict == Fail && strings.HasPrefix(p.Reason, truncationReason):
			add("truncation", High, "answers cut short (finish_reason length) though the context has room",
				"the server clamps the answer silently below what the request asked and the context allows; clients get a shorter answer reported as success", p)
		case p.Verdict == Fail && p.Outcome == OutcomeOK:
			add("wrong-answer", High, "status 200 with a wrong answer",
				"the server returned text that does not follow from the prompt: status codes alone would call it healthy", p)
		case p.Verdict == Fail:
			add("failed-request", High, "requests that fit failed or the stream broke",
				"the server cannot serve requests within its context correctly", p)
		case p.Verdict == Warn:
			add("refused", Medium, "refusals or errors a correct server would not give",
				"prompts within the context were refused, or an oversized prompt got no answer: check the server's limits", p)
		}
	}
	var out []Finding
	for _, k := range order {
		g := groups[k]
		g.f.Title = fmt.Sprintf("%s (%d probes)", g.f.Title, g.count)
		out = append(out, g.f)
	}
	return out
}

func crossTenant(p ProbeResult) bool {
	for _, s := range p.LeakedFrom {
		if s.CrossTenant {
			return true
		}
	}
	return false
}

var severityRank = map[Severity]int{Critical: 0, High: 1, Medium: 2, Info: 3}

// sortFindings puts the most severe first, keeping the order within a
// severity.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(x, y Finding) int { return severityRank[x.Severity] - severityRank[y.Severity] })
}
