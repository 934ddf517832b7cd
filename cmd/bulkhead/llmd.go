package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// llmdFlags are a worker's flags for llm-d's prefill/decode protocol
// (internal/worker, llmd.go; docs/DEPLOY.md, "Kubernetes with llm-d").
type llmdFlags struct {
	on            bool
	tenantsFile   string
	advertise     string
	advertiseKV   string
	trustLoopback bool
}

func (f *llmdFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "llmd", false, "also serve /v1/completions and /v1/chat/completions for llm-d's routing sidecar; kv_transfer_params only from a router certificate (spiffe://bulkhead/router/<name>)")
	fs.StringVar(&f.tenantsFile, "tenants", "", "with --llmd: tenants file (TOML), the same as the gateway's (default: one anonymous tenant, no auth)")
	fs.StringVar(&f.advertise, "llmd-advertise", "", "with --llmd, prefill: host:port decode workers reach this worker's API at (default: the bound --listen address; required when it is a wildcard)")
	fs.StringVar(&f.advertiseKV, "llmd-advertise-kv", "", "with --llmd, decode: host:port prefill workers reach this worker's KV receiver at (default: the bound --kv-listen address; required when it is a wildcard)")
	fs.BoolVar(&f.trustLoopback, "llmd-trust-loopback", false, "with --llmd and no TLS credentials: treat loopback peers as the llm-d router (a sidecar in the same pod, or a dev box)")
}

// config checks the flags against the listen addresses.
func (f *llmdFlags) config(role worker.Role, listen, kvListen string) (*worker.LLMDConfig, error) {
	if !f.on {
		if f.advertise != "" || f.advertiseKV != "" || f.trustLoopback || f.tenantsFile != "" {
			return nil, fmt.Errorf("--tenants, --llmd-advertise, --llmd-advertise-kv and --llmd-trust-loopback need --llmd")
		}
		return nil, nil
	}
	if role == worker.Prefill && f.advertise == "" && wildcard(listen) {
		return nil, fmt.Errorf("--llmd-advertise is required: --listen %s names no address a decode worker can reach", listen)
	}
	if role == worker.Decode && f.advertiseKV == "" && wildcard(kvListen) {
		return nil, fmt.Errorf("--llmd-advertise-kv is required: --kv-listen %s names no address a prefill worker can reach", kvListen)
	}
	return &worker.LLMDConfig{Advertise: f.advertise, AdvertiseKV: f.advertiseKV, TrustLoopback: f.trustLoopback}, nil
}

func wildcard(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// serveOpenAI mounts the OpenAI routes on an llm-d worker.
func (f *llmdFlags) serveOpenAI(w *worker.Worker, m *loader.Model, o serveOptions, logger *slog.Logger) error {
	tenants := tenant.Anonymous()
	if f.tenantsFile != "" {
		var err error
		if tenants, err = tenant.LoadFile(f.tenantsFile); err != nil {
			return &exitCode{2, err}
		}
	}
	if err := o.trust.applySecret(tenants); err != nil {
		return err
	}
	srv := api.NewServer(api.Config{ModelID: m.Name, ParseSpecial: o.trust.parseSpecial, Lenient: lenient, KVTransfer: w.KVTransferGate()},
		w.LLMDEngine(), m.Tok, tenants, logger)
	w.ServeOpenAI(srv)
	return nil
}
