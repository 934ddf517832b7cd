package audit

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	canary := strings.Fields("c1 c2 c3 c4 c5 c6 c7 c8")
	ok := func(text, finish string) reply {
		return reply{Status: 200, Outcome: OutcomeOK, Text: text, FinishReason: finish}
	}
	rejected := reply{Status: 400, Outcome: OutcomeRejected, ErrCode: "context_length_exceeded"}
	tests := []struct {
		name  string
		class fitClass
		r     reply
		want  Verdict
	}{
		{"exact canary passes", fitsWhole, ok(" c1 c2 c3 c4 c5 c6 c7 c8", "length"), Pass},
		{"canary inside longer output passes", fitsWhole, ok(" x c1 c2 c3 c4 c5 c6 c7 c8 y", "stop"), Pass},
		{"wrong word fails", fitsWhole, ok(" c1 c2 c3 c4 c5 c6 c7 c9", "length"), Fail},
		{"reordered canary fails", fitsWhole, ok(" c2 c1 c3 c4 c5 c6 c7 c8", "length"), Fail},
		{"empty 200 fails", fitsWhole, ok("", "stop"), Fail},
		{"oversized empty 200 fails", oversized, ok("", "length"), Fail},
		{"oversized clean 4xx passes", oversized, rejected, Pass},
		{"partly fitting 4xx passes", fitsPartly, rejected, Pass},
		{"fitting 4xx warns", fitsWhole, rejected, Warn},
		{"cut answer at the context limit passes", fitsPartly, ok(" c1 c2", "length"), Pass},
		{"cut answer that is wrong fails", fitsPartly, ok(" c2", "length"), Fail},
		{"short answer that stopped for another reason fails", fitsPartly, ok(" c1 c2", "stop"), Fail},
		{"5xx fails", oversized, reply{Status: 500, Outcome: OutcomeServerError}, Fail},
		{"cut stream fails", fitsWhole, reply{Status: 200, Outcome: OutcomeStreamCut, Text: " c1 c2 c3 c4 c5 c6 c7 c8"}, Fail},
		{"malformed fails", fitsWhole, reply{Status: 200, Outcome: OutcomeMalformed}, Fail},
		{"oversized error event passes", oversized, reply{Status: 200, Outcome: OutcomeStreamError, ErrCode: "context_length_exceeded"}, Pass},
		{"oversized error event after wrong text fails", oversized, reply{Status: 200, Outcome: OutcomeStreamError, Text: " c7 c7"}, Fail},
		{"fitting error event fails", fitsWhole, reply{Status: 200, Outcome: OutcomeStreamError, ErrCode: "internal"}, Fail},
		{"fitting context error event warns", fitsWhole, reply{Status: 200, Outcome: OutcomeStreamError, ErrCode: "context_length_exceeded"}, Warn},
		{"no answer to a fitting prompt fails", fitsWhole, reply{Outcome: OutcomeConnection}, Fail},
		{"no answer to an oversized prompt warns", oversized, reply{Outcome: OutcomeTimeout}, Warn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := judge(StyleCopy, tc.class, canary, tc.r)
			if got != tc.want {
				t.Fatalf("verdict %s (%s), want %s", got, reason, tc.want)
			}
		})
	}
}

func TestJudgeNaturalAcceptsCodeInASentence(t *testing.T) {
	code := []string{"QX7", "49K", "T3M", "6RD"}
	for _, text := range []string{"The access code is QX7-49K-T3M-6RD.", "QX7 49K T3M 6RD", "Code: **QX7-49K-T3M-6RD**"} {
		if v, reason := judge(StyleNatural, fitsWhole, code, reply{Status: 200, Outcome: OutcomeOK, Text: text}); v != Pass {
			t.Errorf("%q: %s (%s), want PASS", text, v, reason)
		}
	}
	if v, _ := judge(StyleNatural, fitsWhole, code, reply{Status: 200, Outcome: OutcomeOK, Text: "QX7-49K-T3M-6RE"}); v != Fail {
		t.Errorf("a code with one wrong character judged %s, want FAIL", v)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		prompt, gen, ctx int
		want             fitClass
	}{
		{248, 8, 256, fitsWhole},
		{249, 8, 256, fitsPartly},
		{255, 8, 256, fitsPartly},
		{256, 8, 256, oversized},
		{512, 8, 256, oversized},
	}
	for _, tc := range tests {
		if got := classify(tc.prompt, tc.gen, tc.ctx); got != tc.want {
			t.Errorf("classify(%d, %d, %d) = %s, want %s", tc.prompt, tc.gen, tc.ctx, got, tc.want)
		}
	}
}
