package api

import "encoding/json"

// jsonNull marshals as null where omitempty would drop a nil pointer.
var jsonNull = json.RawMessage("null")

// usageValue is a body's usage field: the counts, an explicit null on the
// chunks of a stream that asked for usage, or nothing.
func usageValue(u *usageJSON, null bool) any {
	switch {
	case u != nil:
		return u
	case null:
		return jsonNull
	default:
		return nil
	}
}

// usageJSON is OpenAI's usage object.
type usageJSON struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails *promptTokenDetails `json:"prompt_tokens_details,omitempty"`
}

type promptTokenDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (u usageCounts) json() *usageJSON {
	return &usageJSON{PromptTokens: u.prompt, CompletionTokens: u.completion, TotalTokens: u.prompt + u.completion,
		PromptTokensDetails: &promptTokenDetails{CachedTokens: u.cached}}
}
