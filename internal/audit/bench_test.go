package audit

import (
	"strings"
	"testing"
)

// BenchmarkParseStream measures the SSE parser on a 1,000-chunk stream.
func BenchmarkParseStream(b *testing.B) {
	var sb strings.Builder
	for range 1000 {
		sb.WriteString(`data: {"id":"x","object":"text_completion","choices":[{"index":0,"text":" word","finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	stream := sb.String()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		if r := parseStream(200, strings.NewReader(stream)); r.Outcome != OutcomeOK {
			b.Fatal(r.Outcome)
		}
	}
}

// BenchmarkLeakSources measures leak attribution of one output against
// 500 issued canaries.
func BenchmarkLeakSources(b *testing.B) {
	all := issueAll(StyleCopy, 64, 500, 1)
	ix := newLeakIndex(StyleCopy, all)
	out := " " + render(StyleCopy, all[7].Words)
	for b.Loop() {
		ix.sources(all[3], out)
	}
}

// BenchmarkRenderLayout measures building a 100,000-word copy prompt, the
// step fit repeats per /tokenize round trip.
func BenchmarkRenderLayout(b *testing.B) {
	w := Words{Key: "KEY", Canary: vocab(16), Filler: vocab(64)[16:]}
	l := layout{style: StyleCopy, words: w, canary: w.Canary[:8], pos: PosMiddle, seed: 1}
	for b.Loop() {
		l.render(100_000)
	}
}
