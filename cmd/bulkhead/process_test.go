package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests in this file run bulkhead as real processes on 127.0.0.1, built
// from this tree (with or without the leakrepro tag).

var (
	buildMu  sync.Mutex
	binaries = map[string]string{}
	buildDir string
)

// binary builds ./cmd/bulkhead with the given build tags once per test run.
func binary(t *testing.T, tags string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs bulkhead processes; skipped with -short")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := binaries[tags]; ok {
		return b
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "bulkhead-test-bin")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, "bulkhead"+strings.ReplaceAll("-"+tags, ",", "-"))
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, ".")...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %q: %v\n%s", tags, err, msg)
	}
	binaries[tags] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// proc is a running bulkhead process.
type proc struct {
	cmd   *exec.Cmd
	addr  string // the HTTP address it announced
	tls   bool   // it announced https
	kv    string // a decode worker's KV address
	admin string // the admin listener's address (/metrics, /ui), once announced
	done  chan struct{}
	mu    sync.Mutex
	log   strings.Builder
}

var adminAnnounce = regexp.MustCompile(`admin listener at http://([0-9.:]+)`)

var announce = regexp.MustCompile(`on (https?)://([0-9.:]+)(?:/v1)?(?: \(KV ([0-9.:]+)\))?`)

// start runs bin with args and waits until it announces its address.
func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	// Every serving role gets its own admin port, so tests run side by side.
	if len(args) > 0 && (args[0] == "serve" || args[0] == "gateway" || args[0] == "worker") && !slices.Contains(args, "--admin-listen") {
		args = append(slices.Clone(args), "--admin-listen", "127.0.0.1:0")
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			if m := adminAnnounce.FindStringSubmatch(line); m != nil {
				p.admin = m[1]
			}
			p.mu.Unlock()
			if m := announce.FindStringSubmatch(line); m != nil && !announced && strings.HasPrefix(line, "bulkhead:") {
				p.tls, p.addr, p.kv, announced = m[1] == "https", m[2], m[3], true
				close(ready)
			}
		}
		p.cmd.Wait()
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case <-ready:
		return p
	case <-p.done:
		t.Fatalf("%s %v exited before serving:\n%s", bin, args, p.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s %v did not announce an address within 60s:\n%s", bin, args, p.output())
	}
	return nil
}

// adminURL is the base URL of the admin listener (announced before the API).
func (p *proc) adminURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "http://" + p.admin
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
	<-p.done
}

func (p *proc) url() string {
	if p.tls {
		return "https://" + p.addr
	}
	return "http://" + p.addr
}

// runCmd runs bin to completion and returns its exit code, stdout and stderr.
func runCmd(t *testing.T, timeout time.Duration, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return code, out.String(), errb.String()
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := clientFor(url).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tenantsFile writes a tenants file with one tenant per key.
func tenantsFile(t *testing.T, keys ...string) string {
	t.Helper()
	var b strings.Builder
	for i, k := range keys {
		fmt.Fprintf(&b, "[[tenant]]\nid = \"tenant-%d\"\napi_key_sha256 = [%q]\n\n", i, hashKeyForTest(k))
	}
	p := filepath.Join(t.TempDir(), "tenants.toml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
