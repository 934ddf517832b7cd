package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/loader"
)

// The checks jsclient/client.mjs must report in each mode, one "ok NAME"
// line each, so a script that silently ran fewer fails here.
var (
	jsFakeChecks = []string{"completion", "chat", "completionStream", "chatStream", "completionN", "chatNStream", "modelNotFound"}
	jsCopyChecks = []string{"copyCompletionN", "copyPromptList", "copyStreamN", "modelNotFound"}
)

// TestOfficialJSClient runs the official openai npm package (pinned in
// jsclient/package-lock.json; .ci/run installs it with npm ci, and this
// test does when it is missing) against an in-process server: on the fake
// engine, then on the real engine serving the built-in copy model, as
// `bulkhead serve` does without a model file.
func TestOfficialJSClient(t *testing.T) {
	dir := jsClientDir(t)
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	runJSClient(t, dir, jsFakeChecks, "fake", env.http.URL+"/v1", testModel)

	m, err := loader.Load(loader.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := m.NewEngine(loader.PoolOptions{MaxContext: 512, KVTokens: 4096}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	hs := httptest.NewServer(NewServer(Config{ModelID: m.Name}, eng, m.Tok, nil, discardLogger()))
	t.Cleanup(hs.Close)
	type jsCase struct {
		Prompt string `json:"prompt"`
		Want   string `json:"want"`
	}
	var cases []jsCase
	words := copymodel.AuditWords()
	for i := range 2 {
		canary := words.Canary[8*i : 8*i+8]
		text, err := copymodel.Prompt(canary, 3, 60, uint64(70+i))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, jsCase{text, " " + strings.Join(canary, " ")})
	}
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	runJSClient(t, dir, jsCopyChecks, "copy", hs.URL+"/v1", m.Name, string(js))
}

// jsClientDir is jsclient/ with its node_modules installed; it skips
// without node.
func jsClientDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the official JS client test needs node and npm")
	}
	dir, err := filepath.Abs("jsclient")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}

// runJSClient runs client.mjs with args and checks that it reported every
// check in want.
func runJSClient(t *testing.T, dir string, want []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"client.mjs"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node client.mjs %s: %v\n%s", args[0], err, out)
	}
	for _, c := range want {
		if !strings.Contains(string(out), "ok "+c+"\n") {
			t.Errorf("%s: check %q did not report ok:\n%s", args[0], c, out)
		}
	}
}
