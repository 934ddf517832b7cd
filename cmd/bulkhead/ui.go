package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/pagemap"
)

// uiOptions are the flags of the live KV page map (internal/pagemap). The
// map names tenants, so until the admin listener exists it is served only
// on a loopback address, and only when asked for.
type uiOptions struct {
	listen  string
	workers urlList // gateway: the workers' page maps
}

func (u *uiOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&u.listen, "ui-listen", "", "loopback address (e.g. 127.0.0.1:8090) to serve the live KV page map on at /ui (default: off)")
}

// registerGateway adds the gateway's flags: its own listener and the page
// maps of the workers it shows side by side.
func (u *uiOptions) registerGateway(fs *flag.FlagSet) {
	u.register(fs)
	fs.Var(&u.workers, "ui-worker", "a worker's page map base URL, as its --ui-listen serves it (repeat for several)")
}

// start serves the page map when --ui-listen is set; stop ends it.
// options adds the gateway's --ui-worker URLs to o.
func (u *uiOptions) options(o pagemap.Options) pagemap.Options {
	o.Workers = append(o.Workers, u.workers...)
	return o
}

// start serves the page map on --ui-listen, when set; the admin listener
// serves it too (trust.go).
func (u *uiOptions) start(o pagemap.Options, stderr io.Writer) (stop func(), err error) {
	if u.listen == "" {
		return func() {}, nil
	}
	if err := requireLoopback(u.listen); err != nil {
		return nil, &exitCode{2, err}
	}
	ln, err := net.Listen("tcp", u.listen)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: pagemap.New(o), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	fmt.Fprintf(stderr, "bulkhead: live KV page map at http://%s/ui\n", ln.Addr())
	return func() { hs.Close() }, nil
}

// requireLoopback refuses a page-map address other hosts could reach.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--ui-listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("--ui-listen " + addr + ": the page map shows tenant names, so it listens only on a loopback address (127.0.0.1 or [::1]) until the admin listener serves it")
	}
	return nil
}

// startOperatorViews serves metrics and the page map on the admin listener,
// and the page map on --ui-listen when set; stop ends both.
func startOperatorViews(t *trustOptions, u *uiOptions, metrics http.Handler, uiOpts pagemap.Options, log *slog.Logger, stderr io.Writer) (stop func(), err error) {
	stopAdmin, err := t.startAdmin(metrics, pagemap.New(uiOpts), log)
	if err != nil {
		return nil, err
	}
	stopUI, err := u.start(uiOpts, stderr)
	if err != nil {
		stopAdmin()
		return nil, err
	}
	return func() { stopUI(); stopAdmin() }, nil
}
