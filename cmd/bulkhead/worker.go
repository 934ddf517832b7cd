package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/pagemap"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bulkhead-llm/bulkhead/internal/podmetrics"
	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

func runWorker(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("worker", "--role prefill|decode [flags]", stderr)
	var o serveOptions
	o.register(fs)
	role := fs.String("role", "", "prefill or decode (required)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9001", "address of the worker's HTTP API (for the gateway)")
	kvListen := fs.String("kv-listen", "127.0.0.1:9101", "decode: address the KV transfer receiver listens on")
	o.tls.register(fs)
	o.llmd.register(fs)
	fs.StringVar(&o.trust.adminListen, "admin-listen", "", `address of the admin listener (/metrics, /ui) (default 127.0.0.1:9465 for prefill, 127.0.0.1:9466 for decode, so both run beside a gateway on 9464); "off" disables it`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return &exitCode{2, fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if worker.Role(*role) != worker.Prefill && worker.Role(*role) != worker.Decode {
		fs.Usage()
		return &exitCode{2, fmt.Errorf("--role must be prefill or decode, got %q", *role)}
	}
	if o.trust.adminListen == "" {
		o.trust.adminListen = map[string]string{"prefill": "127.0.0.1:9465", "decode": "127.0.0.1:9466"}[*role]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWorkerProcess(ctx, o, worker.Role(*role), *kvListen, stderr, func(addr, kv string) {
		scheme := "http"
		if o.tls != (tlsFlags{}) {
			scheme = "https"
		}
		fmt.Fprintf(stderr, "bulkhead: %s worker on %s://%s (KV %s)\n", *role, scheme, addr, kv)
	})
}

// runWorkerProcess loads the model, runs the capacity check (I3) and serves
// the worker API until ctx ends.
func runWorkerProcess(ctx context.Context, o serveOptions, role worker.Role, kvListen string, stderr io.Writer, ready func(addr, kvAddr string)) error {
	creds, err := o.tls.load()
	if err != nil {
		return err
	}
	addrs := []string{o.listen}
	if role == worker.Decode {
		addrs = append(addrs, kvListen)
	}
	if err := worker.CheckListen(creds, addrs...); err != nil {
		return &exitCode{2, err}
	}
	llmdCfg, err := o.llmd.config(role, o.listen, kvListen)
	if err != nil {
		return &exitCode{2, err}
	}
	m, eng, logger, err := o.startEngine(stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	defer eng.Close()
	vocab, err := m.VocabGGUF()
	if err != nil {
		return err
	}
	var rejected func() uint64 // set once the worker exists
	pm := engineMetrics(string(role), eng, podmetrics.IsolationFunc(func() uint64 { return rejected() }))
	w, err := worker.New(worker.Config{Role: role, Model: m.Name, ModelDigest: m.Digest,
		Layers: m.Model.Config.Layers, KVDim: m.Model.Config.KVDim(), Vocab: vocab, KVListen: kvListen, Logger: logger, Creds: creds, LLMD: llmdCfg}, trackedEngine{eng, pm})
	if err != nil {
		return err
	}
	if llmdCfg != nil {
		if err := o.llmd.serveOpenAI(w, m, o, logger); err != nil {
			return err
		}
	}
	rejected = w.RejectedHandoffs
	if err := startPodMetrics(ctx, o.metricsListen, pm.Handler(), false, logger); err != nil {
		return err
	}
	uiOpts := pagemap.Options{Sources: []pagemap.Source{{Role: string(role), Engine: eng}}, Metrics: pm.Handler()}
	stop, err := startOperatorViews(&o.trust, &o.ui, pm.Handler(), uiOpts, logger, stderr)
	if err != nil {
		return err
	}
	defer stop()
	info := w.Info()
	var tlsCfg *tls.Config
	if creds != nil {
		tlsCfg = worker.ServerTLS(creds)
		logger.Info("worker API and KV transfer use mutual TLS", "identity", creds.Identity.URI())
	} else {
		logger.Warn("no TLS credentials: worker API and KV transfer are plaintext, loopback only")
	}
	return listenAndServeTLS(ctx, o.listen, tlsCfg, w, o.drain, logger, func(addr string) {
		w.SetAdvertise(addr) // a --llmd-advertise given wins
		if ready != nil {
			ready(addr, info.KVAddr)
		}
	})
}
