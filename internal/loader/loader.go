// Package loader opens a model for serving: the GGUF file (or the built-in
// copy model when no path is given), its tokenizer and runtime weights, and
// sizes a KV pool and an engine for it. serve, worker and generate share it.
package loader

import (
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/progress"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/model"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// Model is a loaded model ready to run.
type Model struct {
	Name   string // the id clients use: general.name, the file name, or the copy model's name
	Path   string // "" for the built-in copy model
	File   *gguf.File
	Model  *model.Model
	Tok    *tokenizer.Tokenizer
	Digest string // SHA-256 of the GGUF bytes: metadata and tensors
}

// Options choose what to load.
type Options struct {
	Path     string    // GGUF file; "" loads the built-in copy model
	Name     string    // served model id; "" derives one
	Threads  int       // compute threads; 0 means all cores
	Progress io.Writer // load progress lines; nil for none
	// CopyModel sets the built-in copy model's options when Path is "".
	CopyModel copymodel.Options
}

// Load opens and validates the model, printing progress as it goes.
func Load(o Options) (*Model, error) {
	rep := progress.New(o.Progress, "load", 0, "")
	say := rep.Step
	start := time.Now()
	var (
		f    *gguf.File
		err  error
		name = o.Name
	)
	if o.Path == "" {
		say("loading the built-in copy model (%s)", copymodel.Name)
		b, err := copymodel.Build(o.CopyModel)
		if err != nil {
			return nil, err
		}
		if f, err = gguf.Parse(b); err != nil {
			return nil, fmt.Errorf("copy model: %w", err)
		}
		if name == "" {
			name = copymodel.Name
		}
	} else {
		say("mapping %s", o.Path)
		if f, err = gguf.Open(o.Path); err != nil {
			return nil, err
		}
		if name == "" {
			name = defaultName(f, o.Path)
		}
	}
	m := &Model{Name: name, Path: o.Path, File: f}
	if m.Tok, err = tokenizer.FromGGUF(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: tokenizer: %w", describe(o.Path), err)
	}
	say("tokenizer: %d tokens", m.Tok.VocabSize())
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if m.Model, err = model.Load(f, model.Options{Threads: threads}); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", describe(o.Path), err)
	}
	c := m.Model.Config
	say("model: %s, %d layers, n_embd %d, %d heads (%d KV), vocab %d, context %d, %.1f MiB of weights, %d threads",
		c.Arch, c.Layers, c.Embd, c.Heads, c.KVHeads, c.Vocab, c.Context, float64(m.Model.WeightBytes())/(1<<20), threads)
	if m.Tok.VocabSize() > c.Vocab {
		f.Close()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens but the model's output has only %d", describe(o.Path), m.Tok.VocabSize(), c.Vocab)
	}
	say("hashing model for its digest")
	hash := progress.New(o.Progress, "digest", int64(f.Size()), "B")
	m.Digest = f.DigestWith(func(n int) { hash.Add(int64(n)) })
	hash.Done()
	say("model ready in %s (sha256 %s…)", time.Since(start).Round(time.Millisecond), m.Digest[:12])
	return m, nil
}

// Close releases the model's memory map.
func (m *Model) Close() error { return m.File.Close() }

// EOG lists the tokenizer's end-of-generation token ids.
func (m *Model) EOG() []int32 {
	var ids []int32
	for id := range int32(m.Tok.VocabSize()) {
		if m.Tok.IsEOG(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func defaultName(f *gguf.File, path string) string {
	if n, err := f.String("general.name"); err == nil && n != "" {
		return n
	}
	return path
}

func describe(path string) string {
	if path == "" {
		return "copy model"
	}
	return path
}

// VocabGGUF returns a vocabulary-only GGUF: the architecture, the name and
// every tokenizer.* key of the model, no tensors. A gateway builds its
// tokenizer from it without holding the weights.
func (m *Model) VocabGGUF() ([]byte, error) {
	w := gguf.NewWriter()
	for _, kv := range m.File.KV {
		if kv.Key == "general.architecture" || kv.Key == "general.name" || strings.HasPrefix(kv.Key, "tokenizer.") {
			if err := w.Set(kv.Key, kv.Value); err != nil {
				return nil, err
			}
		}
	}
	return w.Bytes()
}
