// Package copymodel writes bulkhead's built-in "copy" model: a two-layer
// Llama-architecture transformer whose weights are constructed, not
// trained, so that its greedy output depends exactly on its KV cache. Given
// a prompt "… KEY c1 … c8 … KEY" it emits c1 … c8. It is an ordinary GGUF
// file run by the ordinary runtime (internal/model, internal/tokenizer):
// if attention ever reads KV another request wrote, that request's words
// appear in the output. Tests, the zero-setup demo and the audit's
// self-check use it; real deployments load real models.
//
// # Construction
//
// Shape: d_model 512, 4 heads (4 KV heads) of 128, 2 layers, feed-forward
// width 32 with all-zero weights, norm weights 1, eps 1e-5, RoPE in
// llama.cpp's normal mode (pairs (2i, 2i+1)) with freq base 500000. With
// base 10000 no rotary pair turns slowly enough for matches thousands of
// positions apart.
//
// The residual stream is split into T = [0,128), the current token's code;
// P = [128,256), the previous token's code; O = [256,384), the copied
// token's code; and dimension 384, a constant. A token's code is 64 slots,
// each √(2/128)·(cos φ, sin φ) with a pseudo-random phase, so every code has
// norm 1, a code matches itself equally in every slot, and different codes
// are nearly orthogonal. The embedding is 16·code on T and 16 on the
// constant, which makes its RMS exactly 1: layer 1's attn_norm changes
// nothing.
//
// Layer 1, head 0, is a previous-token head. Query and key read only the
// constant dimension, so the score depends only on the distance between the
// positions; in the fast rotary pairs the query is the key turned back by
// one position, so after RoPE the score peaks at "one position back"; the
// scale is chosen when building so that every other offset up to the
// context length scores at least 32 logits lower. It copies T of that
// position into P.
//
// Layer 2 is an induction head in each of the 4 heads: the query reads the
// current token's code from T, the key the previous-token code from P, each
// head on its own 13 code slots placed in its 13 slowest rotary pairs (which
// turn less than 0.94 rad over 32768 positions, so distance barely changes
// a score). A position whose previous token is the current token scores
// ≈ 40 logits, any other ≈ N(0, 8²). Each head copies T of the position it
// attends to into O; the LM head scores every token by its code against O.
//
// So at the final KEY the model attends to the position after the earlier
// KEY and emits c1; fed c1, it finds the position after c1 and emits c2;
// and so on. A request whose pages hold another prompt continues that
// prompt: the stale-page incident shows up as the other tenant's canary.
//
// # Vocabulary
//
// The vocabulary is the project's own, stored as SentencePiece ("llama")
// tokenizer metadata: <unk>, <s>, </s>, the 256 byte-fallback tokens, "▁"
// and the letters, then words "▁" + alternating consonants and vowels,
// grown breadth first as a prefix-closed tree so SentencePiece BPE merges
// every word into exactly one token (see newVocab). add_space_prefix is
// false: text is words each preceded by a space.
package copymodel
