package admin

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMountedHandlersAnswerOnTheAdminAddress(t *testing.T) {
	s := New("127.0.0.1:0")
	s.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") }))
	addr, err := s.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for path, want := range map[string]string{"/metrics": "m 1", "/": "GET /metrics"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{DefaultAddr: true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, ":1": false, "10.0.0.1:1": false} {
		if Loopback(addr) != want {
			t.Errorf("Loopback(%q) = %v", addr, !want)
		}
	}
	if !Loopback(DefaultAddr) {
		t.Error("the default admin address must be loopback")
	}
}
