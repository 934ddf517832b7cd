package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// ErrConnection marks a server that could not be reached or did not answer
// the audit's setup requests; the CLI maps it to exit status 2.
var ErrConnection = errors.New("audit: cannot use server")

// client sends the audit's requests to one server.
type client struct {
	base       string
	metricsURL string // where /metrics is, when not under base (an admin listener)
	model      string
	http       *http.Client
	timeout    time.Duration
}

// send issues a request with an optional JSON body; the caller closes the
// response.
func (c *client) send(ctx context.Context, method, path, key string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("audit: encode %s body: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("audit: build %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return c.http.Do(req)
}

// getJSON fetches path and decodes a 200 JSON body into v.
func (c *client) getJSON(ctx context.Context, path, key string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.send(ctx, http.MethodGet, path, key, nil)
	if err != nil {
		return fmt.Errorf("%w: GET %s: %v", ErrConnection, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%w: GET %s: reading body: %v", ErrConnection, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, snippet(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: body is not the expected JSON: %v", path, err)
	}
	return nil
}

// modelList is /v1/models; max_model_len is vLLM's and SGLang's field.
type modelList struct {
	Data []struct {
		ID          string `json:"id"`
		MaxModelLen int    `json:"max_model_len"`
	} `json:"data"`
}

// llamaProps is llama.cpp's /props, which carries the slot context size.
type llamaProps struct {
	NCtx                      int `json:"n_ctx"`
	DefaultGenerationSettings struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
}

// discover resolves the model name and the advertised context. It returns
// the context's source ("/v1/models" or "/props"); a transport failure
// wraps ErrConnection.
func (c *client) discover(ctx context.Context, key string) (maxCtx int, source string, err error) {
	var ml modelList
	if err := c.getJSON(ctx, "/v1/models", key, &ml); err != nil {
		return 0, "", err
	}
	if c.model == "" {
		if len(ml.Data) != 1 {
			return 0, "", fmt.Errorf("%w: /v1/models lists %d models; choose one with --model", ErrConfig, len(ml.Data))
		}
		c.model = ml.Data[0].ID
	}
	found := false
	for _, m := range ml.Data {
		if m.ID == c.model {
			found, maxCtx = true, m.MaxModelLen
		}
	}
	if !found {
		return 0, "", fmt.Errorf("%w: /v1/models does not list model %q", ErrConfig, c.model)
	}
	if maxCtx > 0 {
		return maxCtx, "/v1/models", nil
	}
	var p llamaProps
	if c.getJSON(ctx, "/props", key, &p) == nil {
		if n := max(p.DefaultGenerationSettings.NCtx, p.NCtx); n > 0 {
			return n, "/props", nil
		}
	}
	return 0, "", fmt.Errorf("%w: the server does not advertise its context length; pass --max-context", ErrConfig)
}

// genRequest is one probe's request.
type genRequest struct {
	Style     Style
	Prompt    string
	MaxTokens int
	Stream    bool
	Key       string
	User      string
}

// generate sends a probe and classifies the answer; it never returns an
// error, because every failure is something to report.
func (c *client) generate(ctx context.Context, g genRequest) reply {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body := map[string]any{
		"model":       c.model,
		"temperature": 0,
		"stream":      g.Stream,
		"user":        g.User,
	}
	if g.MaxTokens > 0 {
		body["max_tokens"] = g.MaxTokens
	}
	path := "/v1/completions"
	if g.Style == StyleNatural {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": g.Prompt}}
	} else {
		body["prompt"] = g.Prompt
	}
	resp, err := c.send(ctx, http.MethodPost, path, g.Key, body)
	if err != nil {
		return failedReply(ctx, err)
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if g.Stream && resp.StatusCode == http.StatusOK && !strings.Contains(ct, "application/json") {
		r := parseStream(resp.StatusCode, resp.Body)
		if r.Outcome == OutcomeStreamCut && ctx.Err() != nil {
			r.Outcome = OutcomeTimeout
		}
		return r
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		r := failedReply(ctx, err)
		r.Status = resp.StatusCode
		return r
	}
	return parseBody(resp.StatusCode, b)
}

// failedReply classifies a transport error.
func failedReply(ctx context.Context, err error) reply {
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return reply{Outcome: OutcomeTimeout, Detail: err.Error()}
	}
	return reply{Outcome: OutcomeConnection, Detail: err.Error()}
}
