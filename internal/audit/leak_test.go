package audit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func vocab(n int) []string {
	v := make([]string, n)
	for i := range v {
		v[i] = fmt.Sprintf("w%03d", i)
	}
	return v
}

// issueAll draws n canaries from a book, as one run would.
func issueAll(style Style, vocabSize, n int, seed uint64) []issuedCanary {
	book := newCanaryBook(style, vocab(vocabSize), rand.New(rand.NewPCG(seed, 1)))
	all := make([]issuedCanary, n)
	for i := range all {
		all[i] = issuedCanary{Probe: i + 1, Tenant: i % 3, Words: book.issue()}
	}
	return all
}

// TestOwnCanaryIsNeverALeak: a correct answer must not be blamed on
// anyone, however much the canaries overlap.
func TestOwnCanaryIsNeverALeak(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		style := rapid.SampledFrom([]Style{StyleCopy, StyleNatural}).Draw(t, "style")
		all := issueAll(style, rapid.IntRange(8, 40).Draw(t, "vocab"), rapid.IntRange(1, 60).Draw(t, "n"), rapid.Uint64().Draw(t, "seed"))
		ix := newLeakIndex(style, all)
		v := all[rapid.IntRange(0, len(all)-1).Draw(t, "victim")]
		out := "The access code is " + render(style, v.Words) + "."
		if style == StyleCopy {
			out = " " + render(style, v.Words)
		}
		if src := ix.sources(v, out); len(src) > 0 {
			t.Fatalf("own canary %v blamed on %v", v.Words, src)
		}
	})
}

// TestAnyForeignPairIsALeak: two consecutive words of another canary that
// the victim's canary does not also hold are always attributed to it.
func TestAnyForeignPairIsALeak(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		style := rapid.SampledFrom([]Style{StyleCopy, StyleNatural}).Draw(t, "style")
		all := issueAll(style, rapid.IntRange(8, 40).Draw(t, "vocab"), rapid.IntRange(2, 60).Draw(t, "n"), rapid.Uint64().Draw(t, "seed"))
		vi := rapid.IntRange(0, len(all)-1).Draw(t, "victim")
		si := rapid.IntRange(0, len(all)-1).Filter(func(i int) bool { return i != vi }).Draw(t, "source")
		v, s := all[vi], all[si]
		j := rapid.IntRange(1, len(s.Words)-1).Draw(t, "pair")
		pair := s.Words[j-1 : j+1]
		for k := 1; k < len(v.Words); k++ {
			if slices.Equal(v.Words[k-1:k+1], pair) {
				t.Skip("the victim's canary holds the same pair")
			}
		}
		out := " " + strings.Join(pair, " ") + " trailing"
		got := newLeakIndex(style, all).sources(v, out)
		if !slices.ContainsFunc(got, func(c issuedCanary) bool { return c.Probe == s.Probe }) {
			t.Fatalf("pair %v of probe %d in output %q not attributed; got %v", pair, s.Probe, out, got)
		}
	})
}

func TestUniqueWordAloneIsALeak(t *testing.T) {
	all := []issuedCanary{
		{Probe: 1, Tenant: 0, Words: strings.Fields("a b c d")},
		{Probe: 2, Tenant: 1, Words: strings.Fields("e f g h")},
		{Probe: 3, Tenant: 2, Words: strings.Fields("a f x y")},
	}
	ix := newLeakIndex(StyleCopy, all)
	tests := []struct {
		name   string
		victim int
		out    string
		want   []int
	}{
		{"unique word of another tenant", 0, " g", []int{2}},
		{"word shared by two others proves nothing alone", 1, " a", nil},
		{"shared word next to a unique one", 1, " a b", []int{1}},
		{"own words and filler are clean", 0, " a b c d f00 f01", nil},
		{"another canary's pair", 0, " x y", []int{3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, c := range ix.sources(all[tc.victim], tc.out) {
				got = append(got, c.Probe)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("sources %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCanaryBookSpreadsWords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(copyCanaryLen, 64).Draw(t, "vocab")
		n := rapid.IntRange(1, 40).Draw(t, "n")
		all := issueAll(StyleCopy, size, n, rapid.Uint64().Draw(t, "seed"))
		uses := map[string]int{}
		for _, c := range all {
			if len(c.Words) != copyCanaryLen {
				t.Fatalf("canary %v has %d words", c.Words, len(c.Words))
			}
			seen := map[string]bool{}
			for _, w := range c.Words {
				if seen[w] {
					t.Fatalf("canary %v repeats %q", c.Words, w)
				}
				seen[w] = true
				uses[w]++
			}
		}
		// Least-used-first drawing keeps usage within one of even.
		lo, hi := n*copyCanaryLen, 0
		for _, w := range vocab(size) {
			lo, hi = min(lo, uses[w]), max(hi, uses[w])
		}
		if hi-lo > 1 {
			t.Fatalf("word usage ranges from %d to %d", lo, hi)
		}
	})
}

func TestNaturalCodesMixLettersAndDigits(t *testing.T) {
	for _, c := range issueAll(StyleNatural, 0, 200, 3) {
		if len(c.Words) != naturalGroups {
			t.Fatalf("code %v has %d groups", c.Words, len(c.Words))
		}
		for _, g := range c.Words {
			if len(g) != naturalGroupLen || !strings.ContainsAny(g, "0123456789") || strings.Trim(g, "0123456789") == "" {
				t.Fatalf("group %q of %v is not three characters with a letter and a digit", g, c.Words)
			}
		}
	}
}

// FuzzLeakSources feeds arbitrary model output to leak attribution: it
// must never panic and never blame the victim's own probe.
func FuzzLeakSources(f *testing.F) {
	f.Add(" w001 w002 w003", false)
	f.Add("The access code is QX7-49K-T3M-6RD.", true)
	f.Add("", false)
	f.Fuzz(func(t *testing.T, out string, natural bool) {
		style := StyleCopy
		if natural {
			style = StyleNatural
		}
		all := issueAll(style, 12, 20, 5)
		for _, src := range newLeakIndex(style, all).sources(all[4], out) {
			if src.Probe == all[4].Probe {
				t.Fatalf("victim blamed for its own canary in %q", out)
			}
		}
	})
}
