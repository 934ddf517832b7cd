package api

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
