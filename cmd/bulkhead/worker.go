package main

import (
	"context"
	"fmt"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWorkerProcess(ctx, o, worker.Role(*role), *kvListen, stderr, func(addr, kv string) {
		fmt.Fprintf(stderr, "bulkhead: %s worker on http://%s (KV %s)\n", *role, addr, kv)
	})
}

// runWorkerProcess loads the model, runs the capacity check (I3) and serves
// the worker API until ctx ends.
func runWorkerProcess(ctx context.Context, o serveOptions, role worker.Role, kvListen string, stderr io.Writer, ready func(addr, kvAddr string)) error {
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
		Layers: m.Model.Config.Layers, KVDim: m.Model.Config.KVDim(), Vocab: vocab, KVListen: kvListen, Logger: logger}, trackedEngine{eng, pm})
	if err != nil {
		return err
	}
	rejected = w.RejectedHandoffs
	if err := startPodMetrics(ctx, o.metricsListen, pm, logger); err != nil {
		return err
	}
	info := w.Info()
	return listenAndServe(ctx, o.listen, w, o.drain, logger, func(addr string) {
		if ready != nil {
			ready(addr, info.KVAddr)
		}
	})
}
