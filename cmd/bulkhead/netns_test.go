package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/copymodel"
)

// TestWorkersInSeparateNetworkNamespaces runs the prefill and the decode
// worker as two hosts (network namespaces joined by a bridge this test
// creates, addresses 10.213.7.0/24 that exist only inside it), and the
// gateway on the host: KV pages cross a real (virtual) network.
func TestWorkersInSeparateNetworkNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to create network namespaces")
	}
	bin := binary(t, "")
	id := os.Getpid() % 10000
	br := fmt.Sprintf("bhbr%d", id)
	hosts := []struct{ ns, veth, addr string }{
		{fmt.Sprintf("bh%d-pre", id), fmt.Sprintf("bhv%dp", id), "10.213.7.2"},
		{fmt.Sprintf("bh%d-dec", id), fmt.Sprintf("bhv%dd", id), "10.213.7.3"},
	}
	sh := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			sh("netns", "del", h.ns)
		}
		sh("link", "del", br)
	})
	setup := [][]string{{"link", "add", br, "type", "bridge"}, {"addr", "add", "10.213.7.1/24", "dev", br}, {"link", "set", br, "up"}}
	for _, h := range hosts {
		setup = append(setup,
			[]string{"netns", "add", h.ns},
			[]string{"link", "add", h.veth, "type", "veth", "peer", "name", h.veth + "x"},
			[]string{"link", "set", h.veth + "x", "netns", h.ns},
			[]string{"link", "set", h.veth, "master", br},
			[]string{"link", "set", h.veth, "up"},
			[]string{"-n", h.ns, "addr", "add", h.addr + "/24", "dev", h.veth + "x"},
			[]string{"-n", h.ns, "link", "set", h.veth + "x", "up"},
			[]string{"-n", h.ns, "link", "set", "lo", "up"})
	}
	for _, args := range setup {
		if err := sh(args...); err != nil {
			t.Skipf("cannot build the test network here (%v)", err)
		}
	}
	pool := []string{"--max-context", "1024", "--kv-tokens", "8192", "--threads", "1", "--log-level", "warn"}
	certs := clusterCerts(t, bin, "--hosts", hosts[0].addr+","+hosts[1].addr)
	pre := start(t, "ip", append([]string{"netns", "exec", hosts[0].ns, bin, "worker", "--role", "prefill",
		"--listen", hosts[0].addr + ":9001", "--tls-dir", certs + "/prefill-0"}, pool...)...)
	dec := start(t, "ip", append([]string{"netns", "exec", hosts[1].ns, bin, "worker", "--role", "decode",
		"--listen", hosts[1].addr + ":9002", "--kv-listen", hosts[1].addr + ":9102", "--tls-dir", certs + "/decode-0"}, pool...)...)
	gw := start(t, bin, "gateway", "--admin-listen", "127.0.0.1:0", "--prefill", pre.url(), "--decode", dec.url(), "--listen", "127.0.0.1:0", "--tls-dir", certs+"/gateway")
	if dec.kv != hosts[1].addr+":9102" {
		t.Fatalf("decode KV address %q, want %s:9102", dec.kv, hosts[1].addr)
	}
	words := copymodel.AuditWords()
	for i := range 3 {
		canary := words.Canary[8*i : 8*i+8]
		prompt, _ := copymodel.Prompt(canary, 10+200*i, 800, uint64(i))
		stream := i%2 == 1
		code, body := completion(t, gw.url(), prompt, 8, stream)
		text := body
		if stream {
			text = sseText(t, body)
		}
		if code != 200 || !strings.Contains(text, " "+strings.Join(canary, " ")) {
			t.Fatalf("request %d across namespaces (stream %v): %d, canary %q not in %s", i, stream, code, strings.Join(canary, " "), body)
		}
	}
	drained(t, pre, dec)
}

// sseText joins the text of a completions SSE stream.
func sseText(t *testing.T, body string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("bad SSE line %q: %v", line, err)
		}
		for _, c := range chunk.Choices {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}
