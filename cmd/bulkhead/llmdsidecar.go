package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/llmdproxy"
)

// sidecarOptions are the flags of `bulkhead llmd-sidecar`.
type sidecarOptions struct {
	listen, decode, logLevel      string
	secure                        bool
	tls                           tlsFlags
	maxBody                       byteSize
	prefillTimeout, decodeTimeout time.Duration
	drain                         time.Duration
}

func (o *sidecarOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.listen, "listen", "0.0.0.0:8000", "address the sidecar serves on (the port the InferencePool targets on decode pods)")
	fs.StringVar(&o.decode, "decode", "127.0.0.1:8200", "host:port of the local decode worker (bulkhead worker --role decode --llmd)")
	fs.BoolVar(&o.secure, "secure-proxy", true, "serve the listener with TLS 1.3, the router certificate as server certificate (as llm-d's sidecar, TLS by default); false: plain HTTP")
	o.tls.register(fs)
	o.maxBody = 8 << 20
	fs.Var(&o.maxBody, "max-body-bytes", "largest request body (and prefill answer) accepted; larger gets 413")
	fs.DurationVar(&o.prefillTimeout, "prefill-timeout", time.Minute, "deadline of the prefill leg (504 when it passes)")
	fs.DurationVar(&o.decodeTimeout, "decode-timeout", 10*time.Minute, "deadline of the decode leg, streaming included")
	fs.DurationVar(&o.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long in-flight requests may finish")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
}

func runLLMDSidecar(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("llmd-sidecar", "[flags]", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: bulkhead llmd-sidecar [flags]

llm-d's routing sidecar for a decode pod, authenticated. A request with the
x-prefiller-host-port header (set by llm-d's EPP) goes first to that prefill
worker (max_tokens 1, stream false, kv_transfer_params {do_remote_decode:
true}); the original request then goes to the local decode worker with the
kv_transfer_params prefill returned, and its answer (SSE included) streams
back unchanged. A prefill error is passed through; there is no decode-only
fallback. Without the header a request goes to decode as it is. GET /health
is answered by the sidecar. Both legs present the router certificate
(spiffe://bulkhead/router/<decode-pod>, from "bulkhead certs --llmd-routers")
over mutual TLS 1.3 and accept only a prefill (first leg) or the matching
decode/<decode-pod> (second leg) certificate of the cluster CA. Without TLS
flags both legs are plain HTTP, for workers run with --llmd-trust-loopback.

flags:
`)
		fs.PrintDefaults()
	}
	var o sidecarOptions
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return &exitCode{2, fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runSidecarProcess(ctx, o, stderr, func(url string) {
		fmt.Fprintf(stderr, "bulkhead: llm-d sidecar on %s, decode %s\n", url, o.decode)
	})
}

// runSidecarProcess serves the sidecar until ctx ends.
func runSidecarProcess(ctx context.Context, o sidecarOptions, stderr io.Writer, ready func(url string)) error {
	logger, err := newLogger(o.logLevel, stderr)
	if err != nil {
		return &exitCode{2, err}
	}
	creds, err := o.tls.load()
	if err != nil {
		return err
	}
	if o.secure && creds == nil {
		return &exitCode{2, fmt.Errorf("--secure-proxy needs the router certificate (--tls-dir, or --tls-cert, --tls-key and --tls-ca); or --secure-proxy=false")}
	}
	p, err := llmdproxy.New(llmdproxy.Config{Decode: o.decode, Creds: creds, MaxBodyBytes: int64(o.maxBody),
		PrefillTimeout: o.prefillTimeout, DecodeTimeout: o.decodeTimeout, Logger: logger})
	if err != nil {
		return &exitCode{2, err}
	}
	if creds == nil {
		logger.Warn("no router certificate: both legs are plain HTTP; workers accept kv_transfer_params only with --llmd-trust-loopback (not for multi-tenant clusters)")
	}
	var tlsCfg *tls.Config
	scheme := "http"
	if o.secure {
		// Clients are the inference gateway's proxies and tenants: no
		// client certificate is asked for on this side.
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{creds.Cert}}
		scheme = "https"
	}
	return listenAndServeTLS(ctx, o.listen, tlsCfg, p, o.drain, logger, func(addr string) {
		if ready != nil {
			ready(scheme + "://" + addr)
		}
	})
}
