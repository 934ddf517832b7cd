// Package model runs the forward pass of Llama-family transformers (llama,
// mistral, qwen2) read from GGUF files.
//
// Load checks every hyper-parameter and tensor shape against the file's
// metadata and keeps the weights as views over the file's memory map. Forward
// runs one step for many sequences at once: the new tokens of all sequences
// are stacked into one activation matrix for every projection and the
// feed-forward network (prefill chunks become matrix–matrix products, many
// decode tokens share one pass over the weights), while attention runs per
// sequence and per head over the sequence's KV pages.
//
// Batch invariance (DESIGN.md I8): every per-token quantity is computed by
// arithmetic whose order does not depend on the other tokens in the step.
// The kernels fix the reduction order of each (row, token) product.
// Attention reads every key and value back from the pages (so the chunk a
// key was written in does not matter) and computes scores and weighted
// values with the same matmul kernels, padded so that a query's result
// does not depend on how many other queries or positions share the
// product (see attention.go). A sequence's logits are therefore
// bit-identical whether it runs alone or batched, at any place in the
// batch, with any thread count and with any chunking of its prefill.
package model
