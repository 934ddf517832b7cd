package api

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// jsChecks are the checks jsclient/client.mjs must report, one "ok NAME"
// line each, so a script that silently ran fewer fails here.
var jsChecks = []string{"completion", "chat", "completionStream", "chatStream", "completionN", "chatNStream", "modelNotFound"}

// TestOfficialJSClient runs the official openai npm package (pinned in
// jsclient/package-lock.json; .ci/run installs it with npm ci, and this
// test does when it is missing) against an in-process server.
func TestOfficialJSClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the official JS client test needs node and npm")
	}
	dir, err := filepath.Abs("jsclient")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	env := newTestEnv(t, apitest.NewFakeEngine(), nil)
	cmd := exec.CommandContext(ctx, node, "client.mjs", env.http.URL+"/v1", testModel)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, out)
	}
	for _, c := range jsChecks {
		if !strings.Contains(string(out), "ok "+c+"\n") {
			t.Errorf("check %q did not report ok:\n%s", c, out)
		}
	}
}
