package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
)

// generateOutput is the --json result of generate.
type generateOutput struct {
	PromptTokens []int32 `json:"prompt_tokens"`
	Tokens       []int32 `json:"tokens"`
	Text         string  `json:"text"`
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", "[--model FILE] --prompt TEXT [flags]", stderr)
	var o serveOptions
	o.registerEngine(fs)
	prompt := fs.String("prompt", "", "prompt text, tokenized with BOS and special-token parsing (default with the copy model: a sample canary prompt)")
	maxTokens := fs.Int("max-tokens", 64, "maximum number of tokens to generate")
	temperature := fs.Float64("temperature", 0, "sampling temperature; 0 is greedy")
	topK := fs.Int("top-k", 0, "keep only the K most probable tokens (0: off)")
	topP := fs.Float64("top-p", 1, "nucleus sampling mass (1: off)")
	minP := fs.Float64("min-p", 0, "drop tokens below this fraction of the top probability (0: off)")
	seed := fs.Uint64("seed", 0, "PRNG seed for sampling")
	ignoreEOS := fs.Bool("ignore-eos", false, "keep generating past end-of-generation tokens")
	asJSON := fs.Bool("json", false, `print {"prompt_tokens","tokens","text"} instead of streaming text`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return invalidUsage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if *maxTokens < 1 {
		return invalidUsage(fmt.Errorf("--max-tokens %d must be at least 1", *maxTokens))
	}
	params := sample.Params{Temperature: *temperature, TopK: *topK, TopP: *topP, MinP: *minP, Seed: *seed}
	if err := params.Validate(); err != nil {
		return invalidUsage(err)
	}
	o.pool.KVMemory = int64(o.kvMemory)
	if err := o.pool.Validate(); err != nil {
		return invalidUsage(err)
	}
	if *prompt == "" {
		if o.model != "" {
			return invalidUsage(errors.New("--prompt is required"))
		}
		w := copymodel.AuditWords()
		p, err := copymodel.Prompt(w.Canary[:8], 10, 64, 1)
		if err != nil {
			return err
		}
		*prompt = p
		fmt.Fprintf(stderr, "no --prompt: using a sample copy-model prompt whose answer is %q\n", strings.Join(w.Canary[:8], " "))
	}
	if o.pool.KVTokens == 0 && o.kvMemory == 0 {
		o.pool.KVTokens = -1 // sized below, once the prompt length is known
	}
	m, err := loader.Load(loader.Options{Path: o.model, Threads: o.threads, Progress: stderr})
	if err != nil {
		return err
	}
	defer m.Close()
	ids := m.Tok.Encode(*prompt, true, true)
	if len(ids) == 0 {
		return invalidUsage(errors.New("the prompt encodes to no tokens"))
	}
	if o.pool.KVTokens == -1 {
		// One sequence: a pool of exactly the context, not a share of RAM.
		o.pool.KVTokens = m.MaxContextFor(o.pool)
	}
	eng, err := m.NewEngine(o.pool, engine.Config{TokenBudget: o.tokenBudget, MaxRunning: max(1, min(o.maxRunning, o.tokenBudget))})
	if err != nil {
		return err
	}
	defer eng.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	events, err := eng.Submit(ctx, engine.Request{ID: "generate", Prompt: ids, MaxTokens: *maxTokens, IgnoreEOS: *ignoreEOS,
		Sampling: engine.Sampling{Temperature: float32(*temperature), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP), Seed: *seed}})
	if err != nil {
		return err
	}
	dec := m.Tok.NewDecoder()
	var out []int32
	for ev := range events {
		switch {
		case ev.Err != nil:
			return ev.Err
		case ev.Finish != nil:
			if ev.Finish.Reason == engine.FinishLength && len(ids)+len(out) >= eng.MaxContext() {
				fmt.Fprintf(stderr, "stopped: the %d-token context is full\n", eng.MaxContext())
			}
		case m.Tok.IsEOG(ev.Token) && !*ignoreEOS:
			// end of generation: not part of the text
		default:
			out = append(out, ev.Token)
			if !*asJSON {
				io.WriteString(stdout, dec.Add(ev.Token))
			}
		}
	}
	if !*asJSON {
		fmt.Fprintln(stdout, dec.Flush())
		return nil
	}
	if out == nil {
		out = []int32{}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(generateOutput{PromptTokens: ids, Tokens: out, Text: decodeAll(m, out)})
}

// decodeAll detokenizes generated tokens as a continuation of the prompt
// (keeping a leading space, as the stream does).
func decodeAll(m *loader.Model, ids []int32) string {
	d := m.Tok.NewDecoder()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Add(id))
	}
	b.WriteString(d.Flush())
	return b.String()
}

// invalidUsage marks a bad invocation (exit status 2).
func invalidUsage(err error) error { return &exitCode{code: 2, err: err} }
