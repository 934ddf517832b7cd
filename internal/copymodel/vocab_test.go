package copymodel

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestEveryWordIsOneToken checks, through internal/tokenizer, that " "+w
// encodes to the single token "▁"+w for every word piece of the vocabulary,
// and decodes back to " "+w.
func TestEveryWordIsOneToken(t *testing.T) {
	for _, size := range testVocabs() {
		r := load(t, Options{Vocab: size})
		v, err := newVocab(size)
		if err != nil {
			t.Fatal(err)
		}
		for id := v.firstWord; id < size; id++ {
			w := strings.TrimPrefix(v.pieces[id], wordSpace)
			got := r.tok.Encode(" "+w, false, false)
			if !slices.Equal(got, []int32{int32(id)}) {
				t.Fatalf("vocab %d: Encode(%q) = %v, want [%d]", size, " "+w, got, id)
			}
			if d := r.tok.Decode(got); d != " "+w {
				t.Fatalf("vocab %d: Decode([%d]) = %q, want %q", size, id, d, " "+w)
			}
		}
	}
}

// testVocabs are the vocabulary sizes the tokenizer tests cover.
func testVocabs() []int {
	if longRun() {
		return []int{MinVocab, DefaultVocab, 32000}
	}
	return []int{MinVocab, DefaultVocab}
}

// TestWordSequencesEncodeWordByWord is a property test: any space-joined
// sequence of vocabulary words encodes to exactly those words' tokens (BOS
// first when asked), and decodes back to the text.
func TestWordSequencesEncodeWordByWord(t *testing.T) {
	r := load(t, Options{})
	v, err := newVocab(DefaultVocab)
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.SliceOfN(rapid.IntRange(v.firstWord, DefaultVocab-1), 1, 40).Draw(rt, "ids")
		var b strings.Builder
		want := []int32{r.tok.BOS()}
		for _, id := range ids {
			b.WriteString(" " + strings.TrimPrefix(v.pieces[id], wordSpace))
			want = append(want, int32(id))
		}
		got := r.tok.Encode(b.String(), true, false)
		if !slices.Equal(got, want) {
			rt.Fatalf("Encode(%q) = %v, want %v", b.String(), got, want)
		}
		if d := r.tok.Decode(got[1:]); d != b.String() {
			rt.Fatalf("Decode = %q, want %q", d, b.String())
		}
	})
}

// TestTextOutsideTheWordsFallsBackToBytes: text the words do not cover
// still round-trips, through letters and byte tokens.
func TestTextOutsideTheWordsFallsBackToBytes(t *testing.T) {
	r := load(t, Options{})
	for _, text := range []string{" hello, wörld!", " 42 ∑ ok", "  two  spaces", "\nnewline\t"} {
		ids := r.tok.Encode(text, false, false)
		if d := r.tok.Decode(ids); d != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, d)
		}
	}
}

// TestAuditWordsAreDisjointSingleTokens checks the audit's key, canary and
// filler words are disjoint and each one token in the smallest and the
// default vocabulary.
func TestAuditWordsAreDisjointSingleTokens(t *testing.T) {
	w := AuditWords()
	if len(w.Canary) < 64 || len(w.Filler) < 64 {
		t.Fatalf("%d canary and %d filler words, want at least 64 each", len(w.Canary), len(w.Filler))
	}
	seen := map[string]string{w.Key: "key"}
	for _, set := range []struct {
		name  string
		words []string
	}{{"canary", w.Canary}, {"filler", w.Filler}} {
		for _, x := range set.words {
			if prev, dup := seen[x]; dup {
				t.Errorf("word %q is both %s and %s", x, prev, set.name)
			}
			seen[x] = set.name
		}
	}
	for _, size := range testVocabs() {
		r := load(t, Options{Vocab: size})
		for x := range seen {
			ids := r.tok.Encode(" "+x, false, false)
			if len(ids) != 1 || r.tok.Decode(ids) != " "+x {
				t.Errorf("vocab %d: %q encodes to %v", size, " "+x, ids)
			}
		}
	}
}

// TestPromptHasRequestedShape is a property test of Prompt: the text
// tokenizes to exactly length tokens with the key at pos and at the end and
// the canary right after the first key.
func TestPromptHasRequestedShape(t *testing.T) {
	r := load(t, Options{})
	key := r.encodeWords([]string{r.words.Key}, false)[0]
	rapid.Check(t, func(rt *rapid.T) {
		nc := rapid.IntRange(0, 12).Draw(rt, "canary words")
		length := rapid.IntRange(nc+3, 300).Draw(rt, "length")
		pos := rapid.IntRange(1, length-2-nc).Draw(rt, "pos")
		rng := splitMix(rapid.Uint64().Draw(rt, "seed"))
		canary := pickDistinct(&rng, r.words.Canary, nc)
		text, err := Prompt(canary, pos, length, rng.next())
		if err != nil {
			rt.Fatal(err)
		}
		ids := r.tok.Encode(text, true, false)
		if len(ids) != length || ids[0] != r.tok.BOS() || ids[pos] != key || ids[length-1] != key {
			rt.Fatalf("prompt %q tokenizes to %d tokens %v", text, len(ids), ids)
		}
		if !slices.Equal(ids[pos+1:pos+1+nc], r.encodeWords(canary, false)[:nc]) {
			rt.Fatalf("canary not at %d in %v", pos+1, ids)
		}
		if c := slices.Index(ids[1:], key); c+1 != pos {
			rt.Fatalf("first key at %d, want %d", c+1, pos)
		}
	})
}

func TestPromptRejectsImpossibleShapes(t *testing.T) {
	canary := AuditWords().Canary[:8]
	for _, c := range []struct{ pos, length int }{{0, 100}, {92, 100}, {1, 9}, {-3, 100}} {
		if _, err := Prompt(canary, c.pos, c.length, 1); !errors.Is(err, ErrPromptShape) {
			t.Errorf("Prompt(pos %d, length %d) = %v, want ErrPromptShape", c.pos, c.length, err)
		}
	}
}

func TestPromptRejectsWordsOutsideTheVocabulary(t *testing.T) {
	w := AuditWords()
	for _, bad := range [][]string{{"xyzzy"}, {w.Key}, {""}, {"ba ba"}, {w.Canary[0], "Ba"}} {
		if _, err := Prompt(bad, 1, 50, 1); !errors.Is(err, ErrNotAWord) {
			t.Errorf("Prompt(%q) = %v, want ErrNotAWord", bad, err)
		}
	}
}

// FuzzPrompt: whatever the arguments, Prompt either refuses them or
// returns a prompt of exactly the requested token count.
func FuzzPrompt(f *testing.F) {
	f.Add("bako tise", 3, 40, uint64(1))
	f.Add(AuditWords().Canary[0], 1, 12, uint64(9))
	f.Add("", 0, 0, uint64(0))
	r := load(f, Options{})
	f.Fuzz(func(t *testing.T, words string, pos, length int, seed uint64) {
		if length > 4096 {
			return // keep each input cheap
		}
		canary := strings.Fields(words)
		text, err := Prompt(canary, pos, length, seed)
		if err != nil {
			return
		}
		if n := len(r.tok.Encode(text, true, false)); n != length {
			t.Fatalf("Prompt(%q, %d, %d) tokenizes to %d tokens", canary, pos, length, n)
		}
	})
}
