package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/tokenizer"
)

// runTokenize prints the token ids of --text under a model's vocabulary:
// as {"tokens":[...]} with --json, else one "id<TAB>piece" line per token.
func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", "--model FILE --text TEXT [--no-bos] [--no-parse-special] [--json]", stderr)
	model := fs.String("model", "", "GGUF file whose vocabulary to use (required)")
	text := fs.String("text", "", "text to tokenize")
	noBOS := fs.Bool("no-bos", false, "add no special tokens (BOS/EOS), as the tokenizer test vectors are made")
	noParse := fs.Bool("no-parse-special", false, "treat special-token text such as <|im_end|> as plain text")
	asJSON := fs.Bool("json", false, `print {"tokens":[...]} instead of one id and piece per line`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitCode{code: 2, err: fmt.Errorf("unexpected argument %q (pass the text with --text)", fs.Arg(0))}
	}
	if *model == "" {
		return &exitCode{code: 2, err: errors.New("--model is required")}
	}
	if !utf8.ValidString(*text) {
		return &exitCode{code: 2, err: errors.New("--text is not valid UTF-8")}
	}
	f, err := gguf.Open(*model)
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *model, err)
	}
	ids := tok.Encode(*text, !*noBOS, !*noParse)
	if len(ids) >= 2 && ids[0] == tok.BOS() && ids[1] == tok.BOS() {
		fmt.Fprintln(stderr, "note: the text starts with the BOS token and BOS was added too; pass --no-bos to avoid a double BOS")
	}
	if *asJSON {
		if ids == nil {
			ids = []int32{}
		}
		return json.NewEncoder(stdout).Encode(struct {
			Tokens []int32 `json:"tokens"`
		}{ids})
	}
	for _, id := range ids {
		if _, err := fmt.Fprintf(stdout, "%6d\t%s\n", id, showPiece(tok, id)); err != nil {
			return err
		}
	}
	return nil
}

// showPiece renders a token's piece readably: control tokens as their text,
// a lone byte that is not text as <0xXX>, anything else Go-quoted so spaces,
// newlines and stray bytes are visible.
func showPiece(tok *tokenizer.Tokenizer, id int32) string {
	if tok.IsControl(id) {
		return tok.TokenText(id)
	}
	p := tok.Piece(id)
	if len(p) == 1 && !utf8.Valid(p) {
		return fmt.Sprintf("<0x%02X>", p[0])
	}
	return strconv.Quote(string(p))
}
