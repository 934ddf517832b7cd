package api

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
)

// Limits on request parameters; beyond them a request is refused rather
// than quietly clamped.
const (
	maxStopStrings   = 16
	maxStopBytes     = 256
	maxTopLogprobs   = 20
	maxCompletionsLP = 5
)

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// commonRequest holds the fields completions and chat share.
type commonRequest struct {
	Model         string         `json:"model"`
	MaxTokens     *int           `json:"max_tokens"`
	Temperature   *float64       `json:"temperature"`
	TopP          *float64       `json:"top_p"`
	TopK          *int           `json:"top_k"`
	MinP          *float64       `json:"min_p"`
	Seed          *int64         `json:"seed"`
	Stop          stringList     `json:"stop"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	N             *int           `json:"n"`
	IgnoreEOS     bool           `json:"ignore_eos"`
	User          string         `json:"user"`

	llmdFields // kvtransfer.go
}

type completionRequest struct {
	commonRequest
	Prompt   promptField `json:"prompt"`
	Logprobs *int        `json:"logprobs"`
	Echo     bool        `json:"echo"`
	Suffix   *string     `json:"suffix"`
}

type chatMessage struct {
	Role    string         `json:"role"`
	Content messageContent `json:"content"`
}

type chatRequest struct {
	commonRequest
	Messages            []chatMessage `json:"messages"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Logprobs            bool          `json:"logprobs"`
	TopLogprobs         *int          `json:"top_logprobs"`
}

// genParams are a request's validated generation settings.
type genParams struct {
	maxTokens    int // 0: not given, use the rest of the context
	sampling     engine.Sampling
	stop         []string
	stream       bool
	includeUsage bool
	logprobs     bool
	topLogprobs  int
	ignoreEOS    bool
}

// validate checks the shared fields against the model and the context size.
func (c *commonRequest) validate(modelID string, maxContext int) (genParams, *apiError) {
	if err := c.checkLLMD(); err != nil {
		return genParams{}, err
	}
	var p genParams
	if c.Model != "" && c.Model != modelID {
		e := invalid("model", "model_not_found", "model %q does not exist; this server serves %q", c.Model, modelID)
		e.reason = "unknown_model"
		return p, e
	}
	if c.N != nil && *c.N != 1 {
		return p, invalid("n", "unsupported_value", "n = %d is not supported; only n = 1", *c.N)
	}
	if c.MaxTokens != nil {
		if *c.MaxTokens <= 0 || *c.MaxTokens > maxContext {
			return p, invalid("max_tokens", "invalid_value", "max_tokens = %d must be between 1 and the context size %d", *c.MaxTokens, maxContext)
		}
		p.maxTokens = *c.MaxTokens
	}
	p.sampling.Temperature, p.sampling.TopP = 1, 1
	if t := c.Temperature; t != nil {
		if *t < 0 || *t > 2 {
			return p, invalid("temperature", "invalid_value", "temperature = %g must be between 0 and 2", *t)
		}
		p.sampling.Temperature = float32(*t)
	}
	if tp := c.TopP; tp != nil {
		if *tp <= 0 || *tp > 1 {
			return p, invalid("top_p", "invalid_value", "top_p = %g must be greater than 0 and at most 1", *tp)
		}
		p.sampling.TopP = float32(*tp)
	}
	if k := c.TopK; k != nil {
		if *k < -1 || *k > 1<<20 {
			return p, invalid("top_k", "invalid_value", "top_k = %d must be -1 or 0 (disabled) or a positive count", *k)
		}
		p.sampling.TopK = max(*k, 0)
	}
	if mp := c.MinP; mp != nil {
		if *mp < 0 || *mp > 1 {
			return p, invalid("min_p", "invalid_value", "min_p = %g must be between 0 and 1", *mp)
		}
		p.sampling.MinP = float32(*mp)
	}
	if c.Seed != nil {
		p.sampling.Seed = uint64(*c.Seed)
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		p.sampling.Seed = binary.LittleEndian.Uint64(b[:])
	}
	if len(c.Stop) > maxStopStrings {
		return p, invalid("stop", "invalid_value", "stop has %d strings; at most %d are allowed", len(c.Stop), maxStopStrings)
	}
	for _, s := range c.Stop {
		if s == "" || len(s) > maxStopBytes {
			return p, invalid("stop", "invalid_value", "each stop string must be 1 to %d bytes long", maxStopBytes)
		}
	}
	p.stop = c.Stop
	p.stream = c.Stream
	if c.StreamOptions != nil {
		if !c.Stream {
			return p, invalid("stream_options", "invalid_value", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = c.StreamOptions.IncludeUsage
	}
	p.ignoreEOS = c.IgnoreEOS
	return p, nil
}

func (r *completionRequest) params(modelID string, maxContext int) (genParams, *apiError) {
	p, err := r.validate(modelID, maxContext)
	if err != nil {
		return p, err
	}
	if !r.Prompt.set {
		return p, invalid("prompt", "missing_field", `field "prompt" is required`)
	}
	if r.Echo {
		return p, invalid("echo", "unsupported_value", "echo is not supported")
	}
	if r.Suffix != nil && *r.Suffix != "" {
		return p, invalid("suffix", "unsupported_value", "suffix is not supported")
	}
	if r.Logprobs != nil {
		if *r.Logprobs < 0 || *r.Logprobs > maxCompletionsLP {
			return p, invalid("logprobs", "invalid_value", "logprobs = %d must be between 0 and %d", *r.Logprobs, maxCompletionsLP)
		}
		p.logprobs, p.topLogprobs = true, *r.Logprobs
	}
	return p, nil
}

func (r *chatRequest) params(modelID string, maxContext int) (genParams, *apiError) {
	if r.MaxCompletionTokens != nil {
		r.MaxTokens = r.MaxCompletionTokens // the newer name wins
	}
	p, err := r.validate(modelID, maxContext)
	if err != nil {
		if err.Param == "max_tokens" && r.MaxCompletionTokens != nil {
			err.Param = "max_completion_tokens"
		}
		return p, err
	}
	if len(r.Messages) == 0 {
		return p, invalid("messages", "missing_field", `field "messages" must be a non-empty array`)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return p, invalid("messages", "invalid_value", "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
	}
	if r.TopLogprobs != nil {
		if *r.TopLogprobs < 0 || *r.TopLogprobs > maxTopLogprobs {
			return p, invalid("top_logprobs", "invalid_value", "top_logprobs = %d must be between 0 and %d", *r.TopLogprobs, maxTopLogprobs)
		}
		if !r.Logprobs && *r.TopLogprobs > 0 {
			return p, invalid("top_logprobs", "invalid_value", "top_logprobs requires logprobs = true")
		}
		p.topLogprobs = *r.TopLogprobs
	}
	p.logprobs = r.Logprobs
	return p, nil
}

// fitMaxTokens applies the default and keeps prompt + output within the context.
func (p *genParams) fitMaxTokens(promptLen, maxContext, defaultMax int) {
	room := maxContext - promptLen
	if p.maxTokens == 0 {
		p.maxTokens = room
		if defaultMax > 0 {
			p.maxTokens = min(defaultMax, room)
		}
	}
	p.maxTokens = min(p.maxTokens, room)
}
