// Command bulkhead is a multi-tenant LLM inference server for GGUF models.
//
// Every capability is a subcommand; run "bulkhead help" for the list and
// "bulkhead CMD -h" for the flags of one.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand. run receives the arguments after the
// subcommand's name and the streams to use; it returns an error to report
// and exit non-zero.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands in the order "bulkhead help" prints them.
// Each one lives in its own file in this directory.
var commands = []command{
	{"serve", "serve the OpenAI-compatible API (default model: the built-in copy model)", runServe},
	{"generate", "generate text from a prompt, greedy or sampled", runGenerate},
	{"tokenize", "print the token ids of a text", runTokenize},
	{"inspect", "print a GGUF file's metadata and tensor table", runInspect},
	{"mkmodel", "write a random-weight model of a known shape", runMkmodel},
	{"bench", "benchmarks: kernels (prefill/decode speed), serve (load generator)", runBench},
	{"audit", "probe an OpenAI-compatible server for context-length and cross-tenant leaks", runAudit},
	{"worker", "run a prefill or decode worker (disaggregated mode)", runWorker},
	{"gateway", "route requests to prefill and decode workers", runGateway},
	{"llmd-sidecar", "llm-d's routing sidecar for a decode pod, over mutual TLS with a router certificate", runLLMDSidecar},
	{"certs", "write a cluster CA and per-role mutual-TLS certificates", runCerts},
	{"demo", "start a gateway, a prefill and a decode worker locally and send requests", runDemo},
}

// exitCode lets a command choose its exit status (the audit exits 1 on a
// failed check and 2 on a usage error).
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string { return e.err.Error() }
func (e *exitCode) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "bulkhead %s: %v\n", c.name, err)
		var ec *exitCode
		if errors.As(err, &ec) {
			return ec.code
		}
		return 1
	}
	fmt.Fprintf(stderr, "bulkhead: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bulkhead COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `run "bulkhead COMMAND -h" for the flags of a command`)
}

// newFlags returns a FlagSet that writes its usage to stderr and returns
// errors instead of exiting, so commands stay testable.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bulkhead "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: bulkhead %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}
