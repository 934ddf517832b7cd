package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// clock is a fake clock advanced by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestNotATerminalGivesOneLinePerStepAndTenth(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	r := NewFor(&buf, false, c.now, "hash", 100<<20, "B")
	r.Step("hashing %s", "m.gguf")
	for range 100 {
		c.t = c.t.Add(10 * time.Millisecond)
		r.Add(1 << 20)
	}
	r.Done()
	out := buf.String()
	if strings.Contains(out, "\r") {
		t.Fatalf("carriage return in a log: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// the step, nine tenths (10%..90%), the summary
	if len(lines) != 11 || lines[0] != "hash: hashing m.gguf" {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	if want := "hash:  50% 50.0 MiB/100.0 MiB, 100.0 MiB/s, ETA 1s"; lines[5] != want {
		t.Fatalf("halfway line %q, want %q", lines[5], want)
	}
	if want := "hash: done, 100.0 MiB in 1s (100.0 MiB/s)"; lines[10] != want {
		t.Fatalf("summary %q, want %q", lines[10], want)
	}
}

func TestTerminalRedrawsABarInPlaceWithRateAndETA(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	r := NewFor(&buf, true, c.now, "mkmodel", 4, "tensors")
	c.t = c.t.Add(time.Second)
	r.Add(1)
	if got := buf.String(); !strings.HasPrefix(got, "\rmkmodel [######------------------]  25% 1/4 tensors, 1.0 tensors/s, ETA 3s") {
		t.Fatalf("bar %q", got)
	}
	c.t = c.t.Add(10 * time.Millisecond)
	r.Add(1) // within 100 ms of the last redraw: not drawn
	if strings.Count(buf.String(), "\r") != 1 {
		t.Fatalf("redrawn too often: %q", buf.String())
	}
	r.Step("layer %d", 2)
	if !strings.Contains(buf.String(), "\nmkmodel: layer 2\n") && !strings.Contains(buf.String(), "\rmkmodel: layer 2\n") {
		t.Fatalf("step not on its own line: %q", buf.String())
	}
	c.t = c.t.Add(time.Second)
	r.Add(2)
	r.Done()
	if !strings.HasSuffix(buf.String(), "mkmodel: done, 4 tensors in 2.01s (2.0 tensors/s)\n") {
		t.Fatalf("end %q", buf.String())
	}
}

func TestNilReporterIsSilent(t *testing.T) {
	var r *Reporter
	r.Step("x")
	r.Add(1)
	r.Done()
	New(nil, "x", 10, "").Add(3) // no writer: no panic, nothing to see
}

func TestStatusIsALinePerStatusInALog(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	r := NewFor(&buf, false, c.now, "audit", 0, "probes")
	for i := 1; i <= 3; i++ {
		c.t = c.t.Add(500 * time.Millisecond)
		r.Add(1)
		r.Status("%d probes, 0 failed", i)
	}
	r.Done()
	want := "audit: 1 probes, 0 failed\naudit: 2 probes, 0 failed\naudit: 3 probes, 0 failed\naudit: done, 3 probes in 1.5s (2.0 probes/s)\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestStatusOnATerminalEndsTheLineRedrawnInPlace(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	r := NewFor(&buf, true, c.now, "audit", 0, "probes")
	c.t = c.t.Add(time.Second)
	r.Add(2)
	r.Status("#2 cliff -> PASS")
	if got := buf.String(); got != "\raudit 2 probes, 2.0 probes/s · #2 cliff -> PASS" {
		t.Fatalf("line %q", got)
	}
	c.t = c.t.Add(10 * time.Millisecond)
	r.Add(1)
	r.Status("#3 cliff -> PASS") // within 100 ms: not drawn
	if strings.Count(buf.String(), "\r") != 1 || strings.Contains(buf.String(), "\n") {
		t.Fatalf("redrawn too often or scrolled: %q", buf.String())
	}
	c.t = c.t.Add(time.Second)
	r.Status("#3 tenants -> LEAK")
	if !strings.HasSuffix(buf.String(), "\raudit 3 probes, 1.5 probes/s · #3 tenants -> LEAK") {
		t.Fatalf("redraw %q", buf.String())
	}
	r.Done()
	if !strings.HasSuffix(buf.String(), "\raudit: done, 3 probes in 2.01s (1.5 probes/s)\n") {
		t.Fatalf("end %q", buf.String())
	}
}
