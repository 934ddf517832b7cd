package main

import "testing"

func TestUIListenIsLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8090": true, "[::1]:0": true, "localhost:8090": true,
		"0.0.0.0:8090": false, ":8090": false, "10.0.0.5:8090": false, "example.com:80": false, "nonsense": false,
	} {
		if err := requireLoopback(addr); (err == nil) != ok {
			t.Errorf("requireLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}
