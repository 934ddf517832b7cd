// Package audit probes an OpenAI-compatible server for the failures that
// let one tenant read another's data: prompts around the advertised context
// length that are answered 200 with the wrong content, a hidden capacity
// cliff below the advertised maximum, and canaries that cross from one
// request into another's output.
//
// The audit judges correctness by content, never by status code. Every
// probe embeds a unique canary and asks the model to repeat it. With P the
// prompt's tokens, G the answer budget and M the advertised context, a
// probe
//
//   - fits when P+G <= M: it passes only with the canary retrieved; a 4xx
//     is a WARN (the server refuses what it advertises);
//   - partly fits when P < M < P+G: the canary, a clean refusal, or an
//     answer cut at the limit (finish_reason "length") that is the
//     canary's start all pass;
//   - is oversized when P >= M: a 4xx or an error event passes, and so
//     does the exact canary (the server held more than it advertised).
//
// Whatever the length, a 200 with a wrong or missing canary, a 5xx, a
// malformed body and a stream that ends without [DONE] or an error event
// FAIL. Any fragment of another probe's canary in an output is a LEAK:
// two of its consecutive words, or a word no other canary holds.
//
// The phases: one short sanity probe (if it fails, nothing else could be
// judged and the run stops); boundary probes at M-G, M-1, M, M+1 and 2M
// with the canary near the start, middle and end, streamed and not; a
// ladder at eighths of M-G and a bisection that brackets any capacity
// cliff; and a cross-tenant phase in which every tenant (one per API key,
// or sessions sharing one key) sends interleaved boundary-length probes
// concurrently.
//
// Prompt lengths are counted with the server's /tokenize when it has one
// (vLLM's {"model","prompt"} or {"model","messages"} shape, or llama.cpp's
// {"content"}), and estimated otherwise, which the report says.
//
// The package speaks only HTTP (net/http and encoding/json), so it runs
// against vLLM, SGLang, llama.cpp or bulkhead alike. Two prompt styles
// exist: "copy" for bulkhead's built-in induction copy model (words
// " f… KEY c1 … c8 f… KEY" sent to /v1/completions, with the caller's
// Words), and "natural" for instruction models (an access code and a
// question, sent to /v1/chat/completions). Run is the single entry point;
// the CLI and the self-check both call it with a base URL.
package audit
