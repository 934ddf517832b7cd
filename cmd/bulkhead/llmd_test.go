package main

import (
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/worker"
)

// A worker on a wildcard address cannot tell llm-d where to fetch from, so
// it refuses to start without the advertise flag; llm-d flags without
// --llmd are refused rather than ignored.
func TestLLMDFlagsRefuseWhatCannotWork(t *testing.T) {
	for _, c := range []struct {
		f        llmdFlags
		role     worker.Role
		listen   string
		kvListen string
		want     string
	}{
		{llmdFlags{on: true}, worker.Prefill, "0.0.0.0:9001", "", "--llmd-advertise is required"},
		{llmdFlags{on: true}, worker.Decode, "127.0.0.1:9001", ":9101", "--llmd-advertise-kv is required"},
		{llmdFlags{trustLoopback: true}, worker.Decode, "127.0.0.1:9001", "127.0.0.1:9101", "need --llmd"},
	} {
		if _, err := c.f.config(c.role, c.listen, c.kvListen); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %s: %v, want %q", c.f, c.role, err, c.want)
		}
	}
	cfg, err := (&llmdFlags{on: true, advertise: "10.0.0.5:9001"}).config(worker.Prefill, "0.0.0.0:9001", "")
	if err != nil || cfg.Advertise != "10.0.0.5:9001" {
		t.Errorf("advertised prefill: %+v %v", cfg, err)
	}
	if cfg, err := (&llmdFlags{}).config(worker.Decode, "0.0.0.0:9001", ":9101"); cfg != nil || err != nil {
		t.Errorf("without --llmd: %+v %v", cfg, err)
	}
}
