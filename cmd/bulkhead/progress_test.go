package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api"
	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/audit"
	"github.com/bulkhead-llm/bulkhead/internal/audit/auditfake"
)

// linesWith returns stderr's lines that start with prefix, failing on a
// carriage return: a log gets plain lines, never a redrawn bar.
func linesWith(t *testing.T, stderr, prefix string) []string {
	t.Helper()
	if strings.Contains(stderr, "\r") {
		t.Fatalf("carriage return in non-terminal output: %q", stderr)
	}
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// bench serve in a log: a line at each tenth of the requests with rate and
// ETA, then the summary.
func TestBenchServeProgressInALogIsALinePerTenth(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(4096)
	hs := httptest.NewServer(api.NewServer(api.Config{ModelID: "fake"}, eng, apitest.ByteTokenizer{},
		nil, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer hs.Close()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "serve", "--url", hs.URL, "--concurrency", "2", "--requests", "10", "--input-len", "8", "--output-len", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := linesWith(t, stderr.String(), "bench serve c=2: ")
	if len(lines) != 10 {
		t.Fatalf("%d progress lines, want 9 tenths and the summary:\n%s", len(lines), stderr.String())
	}
	tenth := regexp.MustCompile(`^bench serve c=2: +(\d+)% (\d+)/10 requests, [0-9.]+ requests/s, ETA \S+$`)
	for i, l := range lines[:9] {
		m := tenth.FindStringSubmatch(l)
		if m == nil || m[1] != strconv.Itoa(10*(i+1)) || m[2] != strconv.Itoa(i+1) {
			t.Errorf("line %d %q, want %d%% %d/10 with rate and ETA", i, l, 10*(i+1), i+1)
		}
	}
	if !regexp.MustCompile(`^bench serve c=2: done, 10 requests in \S+ \([0-9.]+ requests/s\)$`).MatchString(lines[9]) {
		t.Errorf("summary %q", lines[9])
	}
}

// audit in a log: one line per probe, numbered in order with its verdict,
// then the summary counting every probe of the report.
func TestAuditProgressInALogIsALinePerProbe(t *testing.T) {
	srv := auditfake.New(auditfake.Options{MaxContext: 200})
	defer srv.Close()
	var out, errOut strings.Builder
	if code := run([]string{"audit", "--url", srv.URL, "--json", "--concurrency", "2"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	var rep audit.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	lines := linesWith(t, errOut.String(), "audit: ")
	n := len(rep.Probes)
	if n < 5 || len(lines) != n+1 {
		t.Fatalf("%d probes, %d progress lines, want one per probe and the summary:\n%s", n, len(lines), errOut.String())
	}
	probe := regexp.MustCompile(`^audit: (\d+) probes, 0 failed; #\d+ \S+ \d+ tokens -> (PASS|WARN)$`)
	for i, l := range lines[:n] {
		if m := probe.FindStringSubmatch(l); m == nil || m[1] != strconv.Itoa(i+1) {
			t.Errorf("line %d %q, want probe %d with its verdict", i, l, i+1)
		}
	}
	if want := fmt.Sprintf("audit: done, %d probes in ", n); !strings.HasPrefix(lines[n], want) || !strings.HasSuffix(lines[n], " probes/s)") {
		t.Errorf("summary %q, want %q…", lines[n], want)
	}
}

// mkmodel in a log: its steps, then the summary.
func TestMkmodelCopyProgressInALog(t *testing.T) {
	out := filepath.Join(t.TempDir(), "copy.gguf")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"mkmodel", "--shape", "copy", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	lines := linesWith(t, stderr.String(), "mkmodel: ")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "mkmodel: writing "+out) || !strings.HasPrefix(lines[1], "mkmodel: wrote "+out) || !strings.HasPrefix(lines[2], "mkmodel: done in ") {
		t.Fatalf("mkmodel lines %q", lines)
	}
}
