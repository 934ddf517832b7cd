package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
)

// auditHowTo ends audit -h: how to audit a server that is not bulkhead
// with exactly the model the copy-style probes are built for.
const auditHowTo = `
What it does: finds the context the server really enforces (bisection on
prompt length up to 4x the claim) and reports any mismatch with
/v1/models, /props or --max-context; probes both boundaries; fills the KV
pool with concurrent long prompts across tenants; times the prefix cache
across tenants (KS test); and checks a canary in every answer. Exit 0: no
critical or high finding; 1: the server failed; 2: usage or connection.

Auditing vLLM, SGLang or llama.cpp exactly: export bulkhead's copy model
(a standard GGUF v3 file, llama architecture, F16 weights, its own
"llama"-type vocabulary) and serve it (vLLM and SGLang load a GGUF path
too), then audit with copy-style prompts:

  bulkhead mkmodel --shape copy --context 4096 --out copy.gguf
  llama-server -m copy.gguf -c 4096 --port 8081
  bulkhead audit --url http://127.0.0.1:8081 --prompt-style copy --api-key KEY_A --api-key KEY_B

Give one --api-key per real tenant (two or more) to test isolation between
tenants; with one key, or a server that accepts any key, the report says
cross-tenant isolation was not tested.
`

func auditUsage(fs *flag.FlagSet, stderr io.Writer) func() {
	return func() {
		fmt.Fprintf(stderr, "usage: bulkhead audit --url URL [--model NAME] [--api-key KEY ...] [flags]\n\nflags:\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, auditHowTo)
	}
}

// writeHTMLReport writes the HTML report through a temporary file and a
// rename, so a reader never sees half a page.
func writeHTMLReport(path string, rep *audit.Report) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".audit-*.html")
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := rep.WriteHTML(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("--html %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
