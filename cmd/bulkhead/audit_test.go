package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/audit"
	"github.com/bulkhead-llm/bulkhead/internal/audit/auditfake"
)

// useTestCopyWords substitutes a small copy-style vocabulary for the copy
// model's, for the duration of a test.
func useTestCopyWords(t *testing.T) {
	t.Helper()
	w := audit.Words{Key: "KEY"}
	for i := range 32 {
		w.Canary = append(w.Canary, fmt.Sprintf("c%02d", i))
	}
	for i := range 8 {
		w.Filler = append(w.Filler, fmt.Sprintf("f%d", i))
	}
	prev := copyModelWords
	copyModelWords = func() (audit.Words, error) { return w, nil }
	t.Cleanup(func() { copyModelWords = prev })
}

func TestAuditExitCodes(t *testing.T) {
	useTestCopyWords(t)
	fake := func(f auditfake.Fault) string {
		srv := auditfake.New(auditfake.Options{MaxContext: 200, Key: "KEY", Fault: f, CliffTokens: 120})
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a fragment the output must hold
	}{
		{"honest server passes", []string{"--url", fake(auditfake.Honest), "--prompt-style", "copy"}, 0, "PASS:"},
		{"honest server, natural style", []string{"--url", fake(auditfake.Honest)}, 0, "PASS:"},
		{"leaky server fails", []string{"--url", fake(auditfake.LeakOversized), "--prompt-style", "copy", "--api-key", "a", "--api-key", "b"}, 1, "LEAK"},
		{"cliff fails", []string{"--url", fake(auditfake.Cliff), "--prompt-style", "copy"}, 1, "CAPACITY CLIFF"},
		{"500 fails", []string{"--url", fake(auditfake.Error500Oversized), "--prompt-style", "copy"}, 1, "server error 500"},
		{"cut stream fails", []string{"--url", fake(auditfake.CutStreams)}, 1, "without [DONE]"},
		{"server dying mid-audit fails", []string{"--url", fake(auditfake.CrashOversized), "--prompt-style", "copy"}, 1, "stopped early"},
		{"connection refused", []string{"--url", refused}, 2, ""},
		{"missing url", []string{}, 2, ""},
		{"bad style", []string{"--url", fake(auditfake.Honest), "--prompt-style", "haiku"}, 2, ""},
		{"unknown flag", []string{"--nope"}, 2, ""},
		{"stray argument", []string{"--url", "http://x", "extra"}, 2, ""},
		{"help", []string{"-h"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(append([]string{"audit", "--concurrency", "2"}, tc.args...), &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Fatalf("stdout lacks %q:\n%s", tc.stdout, out.String())
			}
		})
	}
}

func TestAuditJSONReport(t *testing.T) {
	srv := auditfake.New(auditfake.Options{MaxContext: 200, Fault: auditfake.LeakOversized})
	defer srv.Close()
	var out, errOut strings.Builder
	code := run([]string{"audit", "--url", srv.URL, "--json", "--sessions", "2"}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut.String())
	}
	var rep audit.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out.String())
	}
	if rep.Counts.Leak == 0 || rep.MaxContext != 200 || len(rep.Probes) == 0 || rep.Tenants != 1 || rep.Sessions != 2 {
		t.Fatalf("report: %d leaks, context %d, %d probes, %d tenants, %d sessions", rep.Counts.Leak, rep.MaxContext, len(rep.Probes), rep.Tenants, rep.Sessions)
	}
	if !strings.Contains(errOut.String(), "audit:") {
		t.Errorf("no progress line on stderr: %q", errOut.String())
	}
}

func TestAuditCopyStyleWithoutWordsIsAUsageError(t *testing.T) {
	prev := copyModelWords
	copyModelWords = func() (audit.Words, error) { return audit.Words{}, errors.New("not wired") }
	t.Cleanup(func() { copyModelWords = prev })
	var out, errOut strings.Builder
	if code := run([]string{"audit", "--url", "http://127.0.0.1:1", "--prompt-style", "copy"}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2 when the copy model's words are not wired", code)
	}
}

func TestAuditHelpSaysHowToAuditOtherServers(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"audit", "-h"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"mkmodel --shape copy", "llama-server -m copy.gguf", "--prompt-style copy", "not tested"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("audit -h lacks %q:\n%s", want, errOut.String())
		}
	}
}

func TestAuditWritesHTML(t *testing.T) {
	useTestCopyWords(t)
	srv := auditfake.New(auditfake.Options{MaxContext: 200, Key: "KEY", Fault: auditfake.LeakOversized})
	defer srv.Close()
	path := t.TempDir() + "/audit.html"
	var out, errOut strings.Builder
	if code := run([]string{"audit", "--url", srv.URL, "--prompt-style", "copy", "--html", path, "--sessions", "2"}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "<mark>", "context-mismatch", ">FAIL<"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
