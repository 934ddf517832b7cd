// Package podmetrics is the Prometheus endpoint a cluster router scrapes on
// every bulkhead role (serve, prefill worker, decode worker, gateway).
//
// It exports vLLM's series names (vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc, ...) so the Gateway API Inference Extension's
// endpoint picker (EPP) reads bulkhead pods with its default "vllm" engine
// type and no configuration, and the same values under bulkhead: names for
// an explicit engine config. Every family carries a # TYPE line: the EPP
// reads an untyped series as 0 while treating it as fresh. The KV usage is
// exported as one 0-1 gauge because the EPP cannot divide two series.
//
// The EPP scrapes every 50 ms by default, so a scrape reads one engine
// snapshot (a mutex-guarded struct copy) and a fixed set of series; no
// per-tenant labels are exported here (those stay on the API's own
// /metrics), which keeps the output small and constant in size.
package podmetrics
