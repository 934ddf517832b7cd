package llmdproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/certs"
)

// PrefillerHeader names the prefill pod (host:port) the EPP chose.
const PrefillerHeader = "x-prefiller-host-port"

// Config configures a Proxy.
type Config struct {
	// Decode is the local decode worker, host:port.
	Decode string
	// Creds is the router certificate presented on both legs. Nil: both
	// legs are plain HTTP (workers with --llmd-trust-loopback on a dev box).
	Creds *certs.Credentials
	// MaxBodyBytes bounds a client body and a prefill answer (default 8 MiB).
	MaxBodyBytes int64
	// PrefillTimeout bounds the prefill leg (default 60 s).
	PrefillTimeout time.Duration
	// DecodeTimeout bounds the decode leg, streaming included (default 10 min).
	DecodeTimeout time.Duration
	Logger        *slog.Logger
}

// Proxy is the sidecar's handler.
type Proxy struct {
	cfg              Config
	scheme           string
	prefill, decoder *http.Client
}

// New checks cfg and builds the two legs' clients.
func New(cfg Config) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(cfg.Decode); err != nil {
		return nil, fmt.Errorf("llmdproxy: decode address %q: want host:port", cfg.Decode)
	}
	switch {
	case cfg.MaxBodyBytes < 0, cfg.PrefillTimeout < 0, cfg.DecodeTimeout < 0:
		return nil, errors.New("llmdproxy: limits and timeouts must be >= 0")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.PrefillTimeout == 0 {
		cfg.PrefillTimeout = time.Minute
	}
	if cfg.DecodeTimeout == 0 {
		cfg.DecodeTimeout = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{cfg: cfg, scheme: "http"}
	pt, dt := transport(), transport()
	if c := cfg.Creds; c != nil {
		if c.Identity.Role != certs.RoleRouter {
			return nil, fmt.Errorf("llmdproxy: certificate %s is not a router certificate: issue spiffe://bulkhead/router/<decode-pod> (bulkhead certs --llmd-routers)", c.Identity)
		}
		p.scheme = "https"
		pt.TLSClientConfig = c.ClientConfig(certs.Role(certs.RolePrefill))
		// router/<name> stands for decode/<name>: the prefill worker binds
		// the handle to that identity, so only that decode worker may get it.
		dt.TLSClientConfig = c.ClientConfig(certs.Exactly(certs.Identity{Role: certs.RoleDecode, Name: c.Identity.Name}))
	}
	p.prefill, p.decoder = &http.Client{Transport: pt}, &http.Client{Transport: dt}
	return p, nil
}

func transport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // a decode answer's headers may wait for admission; the leg's deadline bounds it
	}
}

// Shutdown lets the caller drain; the proxy holds no state of its own.
func (p *Proxy) Shutdown(context.Context) error { return nil }

// pdRoutes are the generation routes bulkhead's workers serve with --llmd.
var pdRoutes = map[string]bool{"/v1/completions": true, "/v1/chat/completions": true}

func (p *Proxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		rw.WriteHeader(http.StatusOK) // the sidecar's own liveness, as llm-d's
		return
	}
	prefiller := r.Header.Get(PrefillerHeader)
	r.Header.Del(PrefillerHeader)
	body, err := p.readBody(rw, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(rw, http.StatusRequestEntityTooLarge, "", fmt.Sprintf("request body is larger than the sidecar's limit of %d bytes", p.cfg.MaxBodyBytes))
			return
		}
		writeError(rw, http.StatusBadRequest, "", "reading the request body: "+err.Error())
		return
	}
	if prefiller == "" || r.Method != http.MethodPost || !pdRoutes[r.URL.Path] {
		p.toDecode(rw, r, body)
		return
	}
	if err := checkHostPort(prefiller); err != nil {
		writeError(rw, http.StatusBadRequest, "", err.Error())
		return
	}
	p.disaggregated(rw, r, prefiller, body)
}

func (p *Proxy) readBody(rw http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > p.cfg.MaxBodyBytes {
		rw.Header().Set("Connection", "close") // do not wait for a body we refuse
		return nil, &http.MaxBytesError{Limit: p.cfg.MaxBodyBytes}
	}
	return io.ReadAll(http.MaxBytesReader(rw, r.Body, p.cfg.MaxBodyBytes))
}

// checkHostPort refuses a header that is not one host:port, so it cannot
// smuggle a path, query or user info into the prefill URL.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" || strings.ContainsAny(s, "/?#@ ") {
		return fmt.Errorf("%s %q: want host:port", PrefillerHeader, s)
	}
	return nil
}

// disaggregated runs the prefill leg, then the decode leg with its params.
func (p *Proxy) disaggregated(rw http.ResponseWriter, r *http.Request, prefiller string, body []byte) {
	preBody, err := prefillBody(r.URL.Path, body)
	if err != nil {
		writeError(rw, http.StatusBadRequest, "", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.PrefillTimeout)
	defer cancel()
	preq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.scheme+"://"+prefiller+r.URL.Path, bytes.NewReader(preBody))
	if err != nil {
		writeError(rw, http.StatusBadRequest, "", err.Error())
		return
	}
	preq.Header = outHeader(r.Header)
	preq.Header.Set("Content-Type", "application/json")
	preq.Header.Add("X-Request-Id", requestID())
	presp, err := p.prefill.Do(preq)
	if err != nil {
		p.cfg.Logger.Warn("prefill leg failed", "prefiller", prefiller, "err", err)
		writeError(rw, legStatus(r.Context(), err), "", "prefill server "+prefiller+" unreachable or refused: "+err.Error())
		return
	}
	defer presp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(presp.Body, p.cfg.MaxBodyBytes+1))
	if err == nil && int64(len(answer)) > p.cfg.MaxBodyBytes {
		err = fmt.Errorf("answer larger than %d bytes", p.cfg.MaxBodyBytes)
	}
	if err != nil {
		writeError(rw, legStatus(r.Context(), err), "", "reading the prefill answer: "+err.Error())
		return
	}
	if presp.StatusCode < 200 || presp.StatusCode > 299 {
		// The prefill refusal is the answer: no decode-only fallback.
		copyHeader(rw.Header(), presp.Header)
		rw.WriteHeader(presp.StatusCode)
		rw.Write(answer)
		return
	}
	decBody, err := decodeBody(body, answer)
	if err != nil {
		writeError(rw, http.StatusBadGateway, "", "prefill server "+prefiller+": "+err.Error())
		return
	}
	p.toDecode(rw, r, decBody)
}

// toDecode sends body to the local decode worker and streams its answer.
func (p *Proxy) toDecode(rw http.ResponseWriter, r *http.Request, body []byte) {
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.DecodeTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, p.scheme+"://"+p.cfg.Decode+r.URL.RequestURI(), rd)
	if err != nil {
		writeError(rw, http.StatusBadRequest, "", err.Error())
		return
	}
	req.Header = outHeader(r.Header)
	resp, err := p.decoder.Do(req)
	if err != nil {
		p.cfg.Logger.Warn("decode leg failed", "decode", p.cfg.Decode, "err", err)
		status := legStatus(r.Context(), err)
		if status == http.StatusBadGateway {
			status = http.StatusServiceUnavailable // the pod's own engine: not ready
		}
		writeError(rw, status, "", "local decode server unreachable or refused: "+err.Error())
		return
	}
	defer resp.Body.Close()
	copyHeader(rw.Header(), resp.Header)
	rw.WriteHeader(resp.StatusCode)
	if err := streamCopy(rw, resp.Body); err != nil && r.Context().Err() == nil {
		p.cfg.Logger.Warn("decode answer cut short", "err", err)
	}
}

// streamCopy copies bytes as they arrive, flushing each read so SSE
// events reach the client when decode sends them.
func streamCopy(rw http.ResponseWriter, src io.Reader) error {
	fl, _ := rw.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := rw.Write(buf[:n]); werr != nil {
				return werr
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// legStatus: a leg that timed out is 504, any other failure 502 (the
// client's own disconnect is never seen by it).
func legStatus(client context.Context, err error) int {
	if errors.Is(err, context.DeadlineExceeded) && client.Err() == nil {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// hopHeaders belong to one connection and are not forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func outHeader(in http.Header) http.Header {
	h := in.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
	}
	h.Del(PrefillerHeader)
	h.Del("Content-Length") // the new body sets its own
	return h
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

func requestID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "bulkhead-sidecar-" + hex.EncodeToString(b)
}

// writeError answers in the OpenAI error shape the API uses.
func writeError(rw http.ResponseWriter, status int, param, msg string) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	var p any
	if param != "" {
		p = param
	}
	b, _ := jsonMarshal(map[string]any{"error": map[string]any{
		"message": msg, "type": errType(status), "param": p, "code": nil}})
	rw.Write(append(b, '\n'))
}

func errType(status int) string {
	if status < 500 {
		return "invalid_request_error"
	}
	return "server_error"
}
