package audit

import (
	"context"
	"fmt"
	"strings"
)

// Position is where a probe's canary sits in its prompt.
type Position string

const (
	PosStart  Position = "start"
	PosMiddle Position = "middle"
	PosEnd    Position = "end"
)

// tailWords keeps every canary out of the prompt's last 32 tokens (the
// final KEY or question aside), so retrieval always reaches back.
const tailWords = 32

// naturalWords is the filler of natural-style prompts: common words that
// tokenizers keep whole.
var naturalWords = strings.Fields(`the river runs past an old mill where farmers bring grain
in autumn and children play by the water while birds sing in tall trees near a quiet road
that leads over green hills to a small town with a market square a church and many houses`)

// layout renders a prompt around a canary with n filler words; the words
// of filler are chosen by index from seed, so a longer prompt extends a
// shorter one and fitting converges.
type layout struct {
	style  Style
	words  Words
	canary []string
	pos    Position
	seed   uint64
}

// minFiller is the smallest filler count a layout accepts.
func (l layout) minFiller() int { return tailWords + 1 }

// render returns the prompt with n filler words (n >= minFiller).
func (l layout) render(n int) string {
	n = max(n, l.minFiller())
	var head int
	switch l.pos {
	case PosStart:
		head = 1
	case PosMiddle:
		head = n / 2
	default:
		head = n - tailWords
	}
	head = min(head, n-tailWords)
	var sb strings.Builder
	l.filler(&sb, 0, head)
	if l.style == StyleNatural {
		fmt.Fprintf(&sb, " The access code is %s.", render(StyleNatural, l.canary))
		l.filler(&sb, head, n)
		sb.WriteString("\n\nWhat is the access code? Reply with the code only.")
		return sb.String()
	}
	sb.WriteString(" " + l.words.Key + " " + render(StyleCopy, l.canary))
	l.filler(&sb, head, n)
	sb.WriteString(" " + l.words.Key)
	return sb.String()
}

// filler writes filler words [from, to) of this layout's sequence.
func (l layout) filler(sb *strings.Builder, from, to int) {
	vocab := l.words.Filler
	if l.style == StyleNatural {
		vocab = naturalWords
	}
	for i := from; i < to; i++ {
		// Every copy word is one token only after a space, the first one
		// too (the copy model's tokenizer adds no space prefix).
		if l.style == StyleCopy || sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(vocab[mix(l.seed, uint64(i))%uint64(len(vocab))])
		if l.style == StyleNatural && i%12 == 11 {
			sb.WriteByte('.')
		}
	}
}

// mix is splitmix64 over (seed, i): a cheap, stateless word chooser.
func mix(seed, i uint64) uint64 {
	z := seed + (i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// fitted is a prompt and its measured length.
type fitted struct {
	Text   string
	Tokens int
	filler int
}

// fit finds the filler count whose prompt is target tokens long. When no
// count gives exactly target (a tokenizer may merge words), it returns the
// nearest length below target, or above it when over is set (so an
// oversized probe stays oversized). hint, when positive, is a filler count
// to try first.
func fit(ctx context.Context, cnt *counter, l layout, target, hint int, over bool) (fitted, error) {
	measure := func(n int) (fitted, error) {
		text := l.render(n)
		t, err := cnt.Count(ctx, text)
		return fitted{Text: text, Tokens: t, filler: max(n, l.minFiller())}, err
	}
	lo, err := measure(l.minFiller())
	if err != nil || lo.Tokens >= target {
		return lo, err
	}
	// Secant steps from the low end: each filler word is about one token.
	n := hint
	if n <= lo.filler {
		n = lo.filler + (target - lo.Tokens)
	}
	var hi fitted
	for range 8 {
		cur, err := measure(n)
		if err != nil {
			return cur, err
		}
		if cur.Tokens == target {
			return cur, nil
		}
		if cur.Tokens < target {
			lo = cur
		} else if hi.Text == "" || cur.filler < hi.filler {
			hi = cur
		}
		slope := 1.0
		if hi.Text != "" && hi.filler > lo.filler {
			slope = float64(hi.Tokens-lo.Tokens) / float64(hi.filler-lo.filler)
		}
		n = lo.filler + max(1, int(float64(target-lo.Tokens)/max(slope, 0.05)))
		if hi.Text != "" && n >= hi.filler {
			n = (lo.filler + hi.filler) / 2
		}
		if hi.Text != "" && hi.filler-lo.filler <= 1 {
			break
		}
	}
	// Grow until the target is bracketed, then bisect.
	for step, tries := max(1, target-lo.Tokens), 0; hi.Text == ""; step, tries = step*2, tries+1 {
		if tries == 40 {
			return lo, fmt.Errorf("audit: cannot build a %d-token prompt: the count stops at %d", target, lo.Tokens)
		}
		cur, err := measure(lo.filler + step)
		if err != nil {
			return cur, err
		}
		if cur.Tokens == target {
			return cur, nil
		}
		if cur.Tokens > target {
			hi = cur
		} else {
			lo = cur
		}
	}
	for hi.Text != "" && hi.filler-lo.filler > 1 {
		cur, err := measure((lo.filler + hi.filler) / 2)
		if err != nil {
			return cur, err
		}
		switch {
		case cur.Tokens == target:
			return cur, nil
		case cur.Tokens < target:
			lo = cur
		default:
			hi = cur
		}
	}
	if over {
		return hi, nil
	}
	return lo, nil
}
