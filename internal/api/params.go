package api

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/sample"
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
	SafetyID      string         `json:"safety_identifier"`

	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	MinTokens           *int               `json:"min_tokens"`
	StopTokenIDs        []int32            `json:"stop_token_ids"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty"`

	llmdFields // kvtransfer.go
	structuredRequest
}

type completionRequest struct {
	commonRequest
	Prompt   promptField `json:"prompt"`
	Logprobs *int        `json:"logprobs"`
	Echo     bool        `json:"echo"`
	Suffix   *string     `json:"suffix"`
	BestOf   *int        `json:"best_of"`
}

// chatMessage is one message as sent: its role and content are checked,
// and the raw object goes to the chat template unchanged.
type chatMessage struct {
	Role    string         `json:"role"`
	Content messageContent `json:"content"`
	raw     json.RawMessage
}

func (m *chatMessage) UnmarshalJSON(b []byte) error {
	type plain chatMessage
	if err := json.Unmarshal(b, (*plain)(m)); err != nil {
		return err
	}
	m.raw = append(json.RawMessage(nil), b...)
	return nil
}

type chatRequest struct {
	commonRequest
	Messages    []chatMessage `json:"messages"`
	Logprobs    bool          `json:"logprobs"`
	TopLogprobs *int          `json:"top_logprobs"`

	// Template inputs (vLLM's and llama-server's names).
	AddGenerationPrompt *bool                      `json:"add_generation_prompt"` // default true
	Documents           json.RawMessage            `json:"documents"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`

	toolRequest // chattools.go
}

// genParams are a request's validated generation settings.
type genParams struct {
	maxTokens    int    // 0: not given, the endpoint's default applies
	maxParam     string // the field maxTokens came from, for errors
	minTokens    int
	defaultMax   int // max_tokens when not given; 0: the rest of the context
	stopTokens   []int32
	sampling     engine.Sampling
	stop         []string
	stream       bool
	includeUsage bool
	logprobs     bool
	topLogprobs  int
	ignoreEOS    bool
	// promptLogprobs: echo with logprobs; the prompt's tokens lead the
	// logprobs (the first with null), offsets count the echoed text.
	promptLogprobs bool
	kvParams       json.RawMessage // llm-d's kv_transfer_params, gated in serveGeneration
	controlText    bool            // decode control tokens as their text (a tool-call parser reads them)
	// n choices per prompt, chosen from bestOf generated (choices.go).
	n, bestOf int
	// newConstraint makes a fresh structured-output constraint for each
	// forked sequence (a constraint is stateful); nil without one.
	newConstraint func() sample.Constraint
}

// validate checks the shared fields against the model and the context size.
func (c *commonRequest) validate(modelID string, maxContext int) (genParams, *apiError) {
	p := genParams{kvParams: c.kvParams()}
	if c.Model != "" && c.Model != modelID {
		e := invalid("model", "model_not_found", "model %q does not exist; this server serves %q", c.Model, modelID)
		e.reason = "unknown_model"
		e.Status = http.StatusNotFound
		return p, e
	}
	if e := c.choices(&p); e != nil {
		return p, e
	}
	if e := c.maxTokens(&p, maxContext); e != nil {
		return p, e
	}
	if e := c.penalties(&p); e != nil {
		return p, e
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
	// echo with logprobs scores the prompt too (engine PromptLogprobs).
	p.promptLogprobs = r.Echo && r.Logprobs != nil
	if r.Suffix != nil && *r.Suffix != "" {
		return p, invalid("suffix", "unsupported_value", "suffix is not supported")
	}
	if r.Logprobs != nil {
		if *r.Logprobs < 0 || *r.Logprobs > maxCompletionsLP {
			return p, invalid("logprobs", "invalid_value", "logprobs = %d must be between 0 and %d", *r.Logprobs, maxCompletionsLP)
		}
		p.logprobs, p.topLogprobs = true, *r.Logprobs
	}
	if e := r.bestOf(&p); e != nil {
		return p, e
	}
	return p, nil
}

func (r *chatRequest) params(modelID string, maxContext int) (genParams, *apiError) {
	p, err := r.validate(modelID, maxContext)
	if err != nil {
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

// fitMaxTokens applies the endpoint's default (defaultMax; 0 means the
// rest of the context) and refuses an explicit max_tokens that does not
// fit beside the prompt, naming both numbers, as OpenAI and vLLM do.
func (p *genParams) fitMaxTokens(param string, promptLen, maxContext, defaultMax int) *apiError {
	room := maxContext - promptLen
	if p.maxTokens == 0 {
		p.maxTokens = room
		if defaultMax > 0 {
			p.maxTokens = min(defaultMax, room)
		}
	}
	if p.maxTokens > room {
		e := invalid(p.maxParam, codeContextLength,
			"this model's maximum context length is %d tokens; the %s has %d tokens and %s is %d, %d in total",
			maxContext, param, promptLen, p.maxParam, p.maxTokens, promptLen+p.maxTokens)
		e.reason = codeContextLength
		return e
	}
	if p.minTokens > p.maxTokens {
		return invalid("min_tokens", "invalid_value", "min_tokens = %d exceeds the maximum of %d output tokens", p.minTokens, p.maxTokens)
	}
	return nil
}

// maxTokens reads max_tokens and max_completion_tokens, which are two names
// for one limit: both may be sent, but only with the same value.
func (c *commonRequest) maxTokens(p *genParams, maxContext int) *apiError {
	name, v := "max_tokens", c.MaxTokens
	if c.MaxCompletionTokens != nil {
		if v != nil && *v != *c.MaxCompletionTokens {
			return invalid("max_completion_tokens", "invalid_value",
				"max_completion_tokens = %d disagrees with max_tokens = %d; send one, or both equal", *c.MaxCompletionTokens, *v)
		}
		name, v = "max_completion_tokens", c.MaxCompletionTokens
	}
	p.maxParam = name
	if v == nil {
		return nil
	}
	if *v <= 0 || *v > maxContext {
		return invalid(name, "invalid_value", "%s = %d must be between 1 and the context size %d", name, *v, maxContext)
	}
	p.maxTokens = *v
	return nil
}

// Ranges of the sampling adjustments (OpenAI's for the penalties and
// logit_bias; vLLM's for repetition_penalty).
const (
	maxLogitBiasEntries = 1024
	maxStopTokenIDs     = 64
)

// penalties validates logit_bias, the three penalties, min_tokens and
// stop_token_ids. Token ids are range-checked against the vocabulary by
// the handler (checkTokenIDs), which knows it.
func (c *commonRequest) penalties(p *genParams) *apiError {
	s := &p.sampling
	for _, f := range []struct {
		name   string
		v      *float64
		lo, hi float64
		dst    *float32
	}{
		{"presence_penalty", c.PresencePenalty, -2, 2, &s.PresencePenalty},
		{"frequency_penalty", c.FrequencyPenalty, -2, 2, &s.FrequencyPenalty},
	} {
		if f.v == nil {
			continue
		}
		if !(*f.v >= f.lo && *f.v <= f.hi) {
			return invalid(f.name, "invalid_value", "%s = %g must be between %g and %g", f.name, *f.v, f.lo, f.hi)
		}
		*f.dst = float32(*f.v)
	}
	if rp := c.RepetitionPenalty; rp != nil {
		if !(*rp > 0 && *rp <= 10) {
			return invalid("repetition_penalty", "invalid_value", "repetition_penalty = %g must be greater than 0 and at most 10 (1 disables it)", *rp)
		}
		s.RepetitionPenalty = float32(*rp)
	}
	if len(c.LogitBias) > maxLogitBiasEntries {
		return invalid("logit_bias", "invalid_value", "logit_bias has %d entries; at most %d are allowed", len(c.LogitBias), maxLogitBiasEntries)
	}
	if len(c.LogitBias) > 0 {
		s.LogitBias = make(map[int32]float32, len(c.LogitBias))
	}
	for k, v := range c.LogitBias {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil || id < 0 {
			return invalid("logit_bias", "invalid_value", "logit_bias key %q is not a token id", k)
		}
		if !(v >= -100 && v <= 100) {
			return invalid("logit_bias", "invalid_value", "logit_bias[%s] = %g must be between -100 and 100", k, v)
		}
		s.LogitBias[int32(id)] = float32(v)
	}
	if mt := c.MinTokens; mt != nil {
		if *mt < 0 {
			return invalid("min_tokens", "invalid_value", "min_tokens = %d must be >= 0", *mt)
		}
		p.minTokens = *mt
		s.MinTokens = *mt
	}
	if len(c.StopTokenIDs) > maxStopTokenIDs {
		return invalid("stop_token_ids", "invalid_value", "stop_token_ids has %d ids; at most %d are allowed", len(c.StopTokenIDs), maxStopTokenIDs)
	}
	p.stopTokens = c.StopTokenIDs
	return nil
}

// checkTokenIDs range-checks the token ids a request names outside its
// prompt (logit_bias keys, stop_token_ids) against the vocabulary.
func checkTokenIDs(p *genParams, tok Tokenizer) *apiError {
	vs, ok := tok.(vocabSizer)
	if !ok {
		if len(p.sampling.LogitBias) > 0 || len(p.stopTokens) > 0 {
			return invalid("logit_bias", "unsupported_value", "this model's tokenizer cannot range-check token ids")
		}
		return nil
	}
	n := int32(vs.VocabSize())
	for id := range p.sampling.LogitBias {
		if id >= n {
			return invalid("logit_bias", "invalid_value", "logit_bias token %d is outside the vocabulary [0, %d)", id, n)
		}
	}
	for _, id := range p.stopTokens {
		if id < 0 || id >= n {
			return invalid("stop_token_ids", "invalid_value", "stop token %d is outside the vocabulary [0, %d)", id, n)
		}
	}
	return nil
}
