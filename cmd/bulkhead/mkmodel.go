package main

import (
	"errors"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/progress"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/model"
)

// weightTypes are the --type values mkmodel accepts.
var weightTypes = map[string]gguf.Type{
	"f32": gguf.F32, "f16": gguf.F16, "bf16": gguf.BF16,
	"q8_0": gguf.Q8_0, "q4_0": gguf.Q4_0, "q4_1": gguf.Q4_1, "q5_0": gguf.Q5_0, "q5_1": gguf.Q5_1,
	"q2_k": gguf.Q2_K, "q3_k": gguf.Q3_K, "q4_k": gguf.Q4_K, "q5_k": gguf.Q5_K, "q6_k": gguf.Q6_K,
	"iq4_nl": gguf.IQ4_NL, "iq4_xs": gguf.IQ4_XS,
}

func runMkmodel(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mkmodel", "--shape NAME --type TYPE --vocab FILE --out FILE [--seed N]", stderr)
	shapeName := fs.String("shape", "tiny", "model shape: "+copyShape+" (the built-in copy model, for auditing any server), "+strings.Join(sortedKeys(model.Shapes), ", "))
	typeName := fs.String("type", "f16", "weight type: "+strings.Join(sortedKeys(weightTypes), ", ")+
		", or a mix: "+strings.Join(sortedKeys(model.Mixes), ", "))
	vocabPath := fs.String("vocab", "", "GGUF file whose tokenizer.* metadata is copied (required)")
	out := fs.String("out", "", "output GGUF path (required); written to a temporary name, then renamed")
	seed := fs.Uint64("seed", 1, "PRNG seed of the weights")
	context := fs.Int("context", 0, "--shape copy only: context length written to the model (default 2048, at most 8192)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return invalidUsage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if *shapeName == copyShape {
		return writeCopyModel(*out, *context, stderr)
	}
	sh, ok := model.Shapes[*shapeName]
	if !ok {
		return invalidUsage(fmt.Errorf("--shape %q: want one of %s", *shapeName, strings.Join(sortedKeys(model.Shapes), ", ")))
	}
	mix, ok := model.Mixes[*typeName]
	if typ, one := weightTypes[*typeName]; one {
		mix, ok = model.Uniform(typ), true
	}
	if !ok {
		return invalidUsage(fmt.Errorf("--type %q: want one of %s, or a mix: %s", *typeName,
			strings.Join(sortedKeys(weightTypes), ", "), strings.Join(sortedKeys(model.Mixes), ", ")))
	}
	if *vocabPath == "" || *out == "" {
		return invalidUsage(errors.New("--vocab FILE and --out FILE are required"))
	}
	start := time.Now()
	vf, err := gguf.Open(*vocabPath)
	if err != nil {
		return err
	}
	defer vf.Close()
	tokens, err := vf.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return fmt.Errorf("vocab %s: %w", *vocabPath, err)
	}
	if sh.Vocab != 0 && sh.Vocab != len(tokens) {
		fmt.Fprintf(stderr, "shape %s has a %d-token vocabulary; using the %d tokens of %s\n", sh.Name, sh.Vocab, len(tokens), *vocabPath)
	}
	sh.Vocab = len(tokens)
	w := gguf.NewWriter()
	rep := progress.New(stderr, "mkmodel", 0, "")
	rep.Step("writing %s: shape %s, %s weights, vocab %d, seed %d", *out, sh.Name, mix.Name, sh.Vocab, *seed)
	if err := model.WriteRandomMix(w, sh, mix, *seed, func(msg string) { rep.Step("%s", msg) }); err != nil {
		return err
	}
	n := 0
	for _, kv := range vf.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			if err := w.Set(kv.Key, kv.Value); err != nil {
				return fmt.Errorf("copying %s: %w", kv.Key, err)
			}
			n++
		}
	}
	if err := w.WriteFile(*out); err != nil {
		return err
	}
	rep.Step("wrote %s (%d tokenizer keys copied) in %v", *out, n, time.Since(start).Round(time.Millisecond))
	rep.Done()
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
