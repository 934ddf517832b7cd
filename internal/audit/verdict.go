package audit

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict is a probe's result.
type Verdict string

const (
	Pass Verdict = "PASS"
	// Warn is a result that is not a leak or a wrong answer but deserves a
	// look, such as a refusal of a prompt the advertised context should
	// hold. It does not fail the audit.
	Warn Verdict = "WARN"
	Fail Verdict = "FAIL"
	// Leak is another probe's canary in this probe's output (critical).
	Leak Verdict = "LEAK"
)

// fitClass places a prompt relative to the context: it leaves room for
// the whole answer, only part of it, or none.
type fitClass int

const (
	fitsWhole fitClass = iota
	fitsPartly
	oversized
)

func classify(promptTokens, maxTokens, maxContext int) fitClass {
	switch {
	case promptTokens >= maxContext:
		return oversized
	case promptTokens+maxTokens > maxContext:
		return fitsPartly
	}
	return fitsWhole
}

func (c fitClass) String() string {
	return [...]string{"fits", "partly fits", "oversized"}[c]
}

// judge decides a probe's verdict from its reply alone; leaks are found
// later, across all probes.
func judge(style Style, class fitClass, canary []string, r reply) (Verdict, string) {
	switch r.Outcome {
	case OutcomeConnection, OutcomeTimeout:
		if class == oversized {
			return Warn, fmt.Sprintf("no answer to an oversized prompt (%s): %s", r.Outcome, r.Detail)
		}
		return Fail, fmt.Sprintf("no answer (%s): %s", r.Outcome, r.Detail)
	case OutcomeMalformed:
		return Fail, "malformed answer: " + r.Detail
	case OutcomeStreamCut:
		return Fail, r.Detail
	case OutcomeServerError:
		return Fail, fmt.Sprintf("server error %d %s", r.Status, errText(r))
	case OutcomeRejected:
		if class != fitsWhole {
			return Pass, fmt.Sprintf("refused with %d %s", r.Status, errText(r))
		}
		return Warn, fmt.Sprintf("refused a prompt the advertised context holds: %d %s", r.Status, errText(r))
	case OutcomeStreamError:
		if class == fitsWhole {
			if isContextError(r) {
				return Warn, "stream error for a prompt the advertised context holds: " + errText(r)
			}
			return Fail, "stream error: " + errText(r)
		}
		if strings.TrimSpace(r.Text) != "" && !truncatedCanary(style, canary, r.Text) {
			return Fail, fmt.Sprintf("streamed %q before reporting an error for a prompt too long for the context", clip(r.Text))
		}
		return Pass, "refused in the stream: " + errText(r)
	}
	fields := outputFields(style, r.Text)
	if containsRun(fields, canary) {
		if class == oversized {
			return Pass, "canary retrieved from a prompt longer than the advertised context"
		}
		return Pass, "canary retrieved"
	}
	if class == fitsPartly && r.FinishReason == "length" && truncatedCanary(style, canary, r.Text) {
		return Pass, "answer cut at the context limit; what came back is the canary's start"
	}
	if style == StyleCopy && r.FinishReason == "length" && len(fields) < len(canary) && (len(fields) == 0 || truncatedCanary(style, canary, r.Text)) {
		return Fail, fmt.Sprintf("%s finish_reason length after %d of %d canary words (%q), though prompt and answer fit the context", truncationReason, len(fields), len(canary), clip(r.Text))
	}
	return Fail, fmt.Sprintf("status %d but canary not retrieved: got %q", r.Status, clip(r.Text))
}

// truncationReason starts the reason of a probe whose answer the server
// cut short though the context had room: a clamp, not a wrong canary.
const truncationReason = "truncated:"

// truncatedCanary reports whether text is consistent with an answer cut
// short: for copy style, a non-empty prefix of the canary; for natural
// style a cut answer cannot be judged, so only a leak can fail it.
func truncatedCanary(style Style, canary []string, text string) bool {
	if style == StyleNatural {
		return true
	}
	f := outputFields(style, text)
	return len(f) > 0 && len(f) <= len(canary) && slices.Equal(f, canary[:len(f)])
}

func isContextError(r reply) bool {
	s := strings.ToLower(r.ErrCode + " " + r.ErrMessage)
	return strings.Contains(s, "context") || strings.Contains(s, "too long") || strings.Contains(s, "exceed")
}

func errText(r reply) string {
	switch {
	case r.ErrCode != "" && r.ErrMessage != "":
		return fmt.Sprintf("(%s: %s)", r.ErrCode, clip(r.ErrMessage))
	case r.ErrCode != "" || r.ErrMessage != "":
		return "(" + clip(r.ErrCode+r.ErrMessage) + ")"
	case r.Detail != "":
		return "(" + r.Detail + ")"
	}
	return ""
}

// clip shortens text for a one-line reason.
func clip(s string) string {
	const n = 160
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
