package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/progress"
)

// copyShape is the mkmodel shape that exports the built-in copy model, so
// an operator can load exactly the model the audit's copy-style probes are
// built for into vLLM, SGLang or llama.cpp and audit that server.
const copyShape = "copy"

// writeCopyModel writes the copy model as a standard GGUF v3 file
// (general.architecture "llama", F16 matrices, a "llama"-model tokenizer
// in tokenizer.ggml.*) with the given context.
func writeCopyModel(out string, context int, stderr io.Writer) error {
	if out == "" {
		return invalidUsage(errors.New("--out FILE is required"))
	}
	if context < 0 || context == 1 || context > copymodel.MaxContext {
		return invalidUsage(fmt.Errorf("--context %d: want 2..%d", context, copymodel.MaxContext))
	}
	n := context
	if n == 0 {
		n = copymodel.DefaultContext
	}
	rep := progress.New(stderr, "mkmodel", 0, "")
	rep.Step("writing %s: the copy model %q, context %d", out, copymodel.Name, n)
	if err := copymodel.WriteFile(out, copymodel.Options{Context: context}); err != nil {
		return err
	}
	rep.Step("wrote %s; audit a server loading it with: bulkhead audit --url URL --prompt-style copy", out)
	rep.Done()
	return nil
}
