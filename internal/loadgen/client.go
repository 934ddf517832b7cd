package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"
)

// client talks OpenAI-compatible HTTP.
type client struct {
	http   *http.Client
	fresh  *http.Client // dials a new connection for every request: the resend path
	root   string       // server root, without /v1
	apiKey string
}

func newClient(cfg Config) *client {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency + 4}}
	}
	root := strings.TrimSuffix(strings.TrimSuffix(cfg.URL, "/"), "/v1")
	return &client{http: hc, fresh: freshClient(hc), root: root, apiKey: cfg.APIKey}
}

// freshClient is hc with keep-alives off, so a resend cannot be handed
// another idle connection the server may be closing too (with several
// idle connections, each resend on the shared pool could land on the
// next one). A transport we cannot clone is used as it is.
func freshClient(hc *http.Client) *http.Client {
	t, ok := hc.Transport.(*http.Transport)
	if hc.Transport == nil {
		t, ok = http.DefaultTransport.(*http.Transport)
	}
	if !ok {
		return hc
	}
	t = t.Clone()
	t.DisableKeepAlives = true
	fc := *hc
	fc.Transport = t
	return &fc
}

func (c *client) do(ctx context.Context, method, url string, body []byte) (*http.Response, error) {
	return c.doWith(c.http, ctx, method, url, body)
}

func (c *client) doWith(hc *http.Client, ctx context.Context, method, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return hc.Do(req)
}

// firstModel asks /v1/models for the served model's id.
func (c *client) firstModel(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, http.MethodGet, c.root+"/v1/models", nil)
	if err != nil {
		return "", fmt.Errorf("loadgen: listing models: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("loadgen: listing models: HTTP %d: %s", resp.StatusCode, errorMessage(resp.Body))
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) == 0 {
		return "", fmt.Errorf("loadgen: listing models: no model in the answer (%v)", err)
	}
	return out.Data[0].ID, nil
}

// result is one request's measurements.
type result struct {
	err          error
	transport    bool // err is the connection's, not an answer from the server
	retries      int  // resends after a reused connection closed before any response byte
	start        time.Time
	ttft         time.Duration
	itl          []time.Duration // gaps between content chunks
	latency      time.Duration
	promptTokens int // from usage, or the measured prompt length
	outputTokens int // from usage, or content chunks counted
}

type completionChoice struct {
	Text         string  `json:"text"`
	FinishReason *string `json:"finish_reason"`
}

type completionBody struct {
	Choices []completionChoice `json:"choices"`
	Usage   *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// complete sends one completions request and measures it.
func (c *client) complete(ctx context.Context, cfg Config, model, prompt string) result {
	req := map[string]any{"model": model, "prompt": prompt, "max_tokens": cfg.OutputLen, "temperature": 0, "stream": cfg.Stream}
	if cfg.Stream {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	if cfg.IgnoreEOS {
		req["ignore_eos"] = true
	}
	body, _ := json.Marshal(req)
	r := result{start: time.Now()}
	var resp *http.Response
	for {
		var reused, answered bool
		trace := &httptrace.ClientTrace{
			GotConn:              func(i httptrace.GotConnInfo) { reused = i.Reused },
			GotFirstResponseByte: func() { answered = true },
		}
		hc := c.http
		if r.retries > 0 {
			hc = c.fresh
		}
		var err error
		resp, err = c.doWith(hc, httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.root+"/v1/completions", body)
		if err == nil {
			break
		}
		// A keep-alive connection the server closed while it sat idle in
		// our pool fails before the server has said anything: the server
		// never took the request, so sending it again on a fresh
		// connection is safe and is what a healthy exchange looks like.
		// The resend dials afresh, so one resend is enough: if a new
		// connection fails too, the failure is real.
		if reused && !answered && ctx.Err() == nil && r.retries < maxRetries {
			r.retries++
			continue
		}
		r.err, r.transport = err, true
		return r
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, errorMessage(resp.Body))
		return r
	}
	if !cfg.Stream {
		var out completionBody
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			r.err = fmt.Errorf("decoding response: %w", err)
			var se *json.SyntaxError
			r.transport = !errors.As(err, &se)
			return r
		}
		r.latency = time.Since(r.start)
		r.ttft = r.latency
		if out.Usage != nil {
			r.promptTokens, r.outputTokens = out.Usage.PromptTokens, out.Usage.CompletionTokens
		}
		return r
	}
	r.err, r.transport = c.readStream(resp.Body, &r)
	r.latency = time.Since(r.start)
	return r
}

// maxRetries bounds the resends of one request after a reused
// connection closed under it; the resend is on a fresh connection.
const maxRetries = 1

// readStream reads SSE events until [DONE]; an error event or a stream
// that ends without [DONE] is a failure of the server, an error reading
// the connection one of transport (transport is true).
func (c *client) readStream(body io.Reader, r *result) (err error, transport bool) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var last time.Time
	chunks := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			if r.outputTokens == 0 {
				r.outputTokens = chunks
			}
			return nil, false
		}
		now := time.Now()
		var ev completionBody
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("bad stream event: %w", err), false
		}
		if ev.Error != nil {
			return fmt.Errorf("error event: %s", ev.Error.Message), false
		}
		if ev.Usage != nil && ev.Usage.CompletionTokens > 0 {
			r.promptTokens, r.outputTokens = ev.Usage.PromptTokens, ev.Usage.CompletionTokens
		}
		if len(ev.Choices) == 0 || ev.Choices[0].Text == "" {
			continue
		}
		chunks++
		if last.IsZero() {
			r.ttft = now.Sub(r.start)
		} else {
			r.itl = append(r.itl, now.Sub(last))
		}
		last = now
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stream: %w", err), true
	}
	return errors.New("stream ended without [DONE]"), false
}

// errorMessage extracts an OpenAI error message, or the start of the body.
func errorMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 4096))
	var eb struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
		return eb.Error.Message
	}
	return strings.TrimSpace(string(b))
}
