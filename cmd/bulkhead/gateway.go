package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/bulkhead-llm/bulkhead/internal/pagemap"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
	"github.com/bulkhead-llm/bulkhead/internal/podmetrics"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// urlList is a repeatable flag that also takes comma-separated values.
type urlList []string

func (u *urlList) String() string { return strings.Join(*u, ",") }
func (u *urlList) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !strings.HasPrefix(p, "http://") && !strings.HasPrefix(p, "https://") {
				p = "http://" + p
			}
			*u = append(*u, p)
		}
	}
	return nil
}

type gatewayOptions struct {
	prefill, decode urlList
	listen          string
	tenantsFile     string
	maxContext      int
	interval        time.Duration
	drain           time.Duration
	logLevel        string
	tls             tlsFlags     // mutual TLS to the workers (certs.go)
	trust           trustOptions // trust.go
	ui              uiOptions    // the live page map, see ui.go
	metricsListen   string       // podmetrics.go
}

func (o *gatewayOptions) register(fs *flag.FlagSet) {
	registerLenient(fs)
	fs.Var(&o.prefill, "prefill", "prefill worker URL (repeat, or comma-separate, for several)")
	fs.Var(&o.decode, "decode", "decode worker URL (repeat, or comma-separate, for several)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve the OpenAI API on")
	fs.StringVar(&o.tenantsFile, "tenants", "", "tenants file (TOML) (default: one anonymous tenant, no auth)")
	fs.IntVar(&o.maxContext, "max-context", 0, "context to advertise and require of every worker (default: the first worker's)")
	fs.DurationVar(&o.interval, "check-interval", 5*time.Second, "how often worker configuration is re-checked for drift")
	fs.DurationVar(&o.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long in-flight requests may finish")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	o.tls.register(fs)
	o.trust.registerServer(fs)
	o.ui.registerGateway(fs)
	registerMetricsListen(fs, &o.metricsListen)
}

func runGateway(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gateway", "--prefill URL --decode URL [flags]", stderr)
	var o gatewayOptions
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || len(o.prefill) == 0 || len(o.decode) == 0 {
		fs.Usage()
		return &exitCode{2, fmt.Errorf("need at least one --prefill and one --decode worker")}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runGatewayProcess(ctx, o, stderr, func(addr string) {
		fmt.Fprintf(stderr, "bulkhead: gateway serving the OpenAI API on http://%s/v1\n", addr)
	})
}

func runGatewayProcess(ctx context.Context, o gatewayOptions, stderr io.Writer, ready func(string)) error {
	var tenants *tenant.Registry
	if o.tenantsFile != "" {
		var err error
		if tenants, err = tenant.LoadFile(o.tenantsFile); err != nil {
			return &exitCode{2, err}
		}
	}
	return runGatewayProcessWith(ctx, o, tenants, stderr, ready)
}

// runGatewayProcessWith serves the gateway with a tenant registry given in
// process (nil: one anonymous tenant).
func runGatewayProcessWith(ctx context.Context, o gatewayOptions, tenants *tenant.Registry, stderr io.Writer, ready func(string)) error {
	logger, err := newLogger(o.logLevel, stderr)
	if err != nil {
		return &exitCode{2, err}
	}
	creds, err := o.tls.load()
	if err != nil {
		return err
	}
	gc := gateway.Config{Prefill: o.prefill, Decode: o.decode, MaxContext: o.maxContext,
		CheckInterval: o.interval, Logger: logger}
	if creds != nil {
		gc.Client = gateway.TLSClient(creds)
		gc.Prefill, gc.Decode = httpsURLs(o.prefill), httpsURLs(o.decode)
	}
	g, err := gateway.New(ctx, gc)
	if err != nil {
		return err
	}
	defer g.Close()
	if err := o.trust.applySecret(tenants); err != nil {
		return err
	}
	pm := podmetrics.New(g, nil, podmetrics.Config{Role: "gateway"})
	ls := newLateServer(ctx, g, trackedGateway{g, pm}, api.Config{ModelID: g.Model(), ParseSpecial: o.trust.parseSpecial, Lenient: lenient}, tenants, logger)
	metrics := adminMetrics(ls.MetricsGatherer, pm.Gatherer())
	if err := startPodMetrics(ctx, o.metricsListen, metrics, true, logger); err != nil {
		return err
	}
	uiOpts := o.ui.options(pagemap.Options{Metrics: metrics, Gateway: g})
	stop, err := startOperatorViews(&o.trust, &o.ui, metrics, uiOpts, logger, stderr)
	if err != nil {
		return err
	}
	defer stop()
	return listenAndServe(ctx, o.listen, ls, o.drain, logger, ready)
}
