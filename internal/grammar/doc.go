// Package grammar constrains generation to a formal language: a GBNF
// grammar (llama-server's format), a JSON schema, or a regular expression,
// all compiled to one byte-level pushdown program.
//
// A Grammar is a set of rules; each rule is a list of alternatives and each
// alternative a sequence of elements, which are either a set of bytes or a
// reference to a rule. Literals, character classes (code points, also
// negated) and the repetition operators are lowered to that form when
// parsing: a class over non-ASCII code points becomes a rule whose
// alternatives are UTF-8 byte-range sequences, so the matcher never decodes
// UTF-8 and can only ever produce valid UTF-8 for such classes.
//
// A Matcher holds the set of parse stacks that the bytes seen so far leave
// alive (a Earley-less, llama.cpp-style pushdown recogniser). Stacks are
// persistent linked lists that share their tails, and each node carries a
// hash of its whole stack, so a set is deduplicated in O(1) per stack and a
// whole state has a key (used to memoise token masks).
//
// Vocab is a byte trie over a tokenizer's pieces. Mask walks it once from
// the current state, advancing the stack set one byte per trie edge, so a
// prefix shared by many tokens is tested once and a dead prefix prunes its
// whole subtree.
package grammar
