// Package progress is the one progress reporter of every long command (model
// load, hashing the model for its digest, mkmodel, bench, audit): on a
// terminal a bar redrawn in place with its rate and ETA, and otherwise (a
// log file, a CI job) one plain line per step, so logs stay readable and
// greppable.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// redraw is the shortest interval between two redraws of a terminal bar.
const redraw = 100 * time.Millisecond

// Reporter reports one task: named steps, and optionally a count of units
// done out of a known total. A nil *Reporter, or one on a nil writer,
// reports nothing, so callers need no checks. It is safe for concurrent use.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	term     bool
	now      func() time.Time
	label    string
	unit     string // "B" is shown in binary units (KiB, MiB)
	total    int64
	done     int64
	start    time.Time
	drawn    time.Time
	lineLen  int
	finished bool
	status   string // the latest Status, shown at the end of the bar
}

// New reports on w, as a bar if w is a terminal. total is the number of
// units the task has (0 if unknown: then only steps are shown).
func New(w io.Writer, label string, total int64, unit string) *Reporter {
	return NewFor(w, IsTerminal(w), time.Now, label, total, unit)
}

// NewFor is New with the terminal test and the clock given (for tests).
func NewFor(w io.Writer, terminal bool, now func() time.Time, label string, total int64, unit string) *Reporter {
	return &Reporter{w: w, term: terminal, now: now, label: label, unit: unit, total: total, start: now()}
}

// IsTerminal reports whether w is a character device, where a line can be
// redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Step reports a named step: a line of its own when not on a terminal; on a
// terminal it is printed above the bar.
func (r *Reporter) Step(format string, args ...any) {
	if r == nil || r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLocked()
	fmt.Fprintf(r.w, "%s: %s\n", r.label, fmt.Sprintf(format, args...))
	if r.term && (r.total > 0 || r.status != "") && !r.finished {
		r.drawLocked()
	}
}

// Status reports how the task stands, e.g. the outcome of the latest of
// many small steps (an audit's probes): its own line when not a terminal; on
// a terminal it replaces the end of the bar, redrawn in place at most every
// 100 ms, so a thousand statuses do not scroll a thousand lines.
func (r *Reporter) Status(format string, args ...any) {
	if r == nil || r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = fmt.Sprintf(format, args...)
	if !r.term {
		fmt.Fprintf(r.w, "%s: %s\n", r.label, r.status)
		return
	}
	if now := r.now(); !r.finished && now.Sub(r.drawn) >= redraw {
		r.drawn = now
		r.drawLocked()
	}
}

// Add records n more units done. On a terminal it redraws the bar (at most
// every 100 ms); otherwise it prints a line at each tenth of the total, so a
// log shows a long hash or write advancing without one line per chunk.
func (r *Reporter) Add(n int64) {
	if r == nil || r.w == nil || n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.done
	r.done += n
	if r.finished || (r.total <= 0 && !(r.term && r.status != "")) {
		return
	}
	if r.term {
		if now := r.now(); now.Sub(r.drawn) >= redraw || (r.total > 0 && r.done >= r.total) {
			r.drawn = now
			r.drawLocked()
		}
		return
	}
	if tenth := func(d int64) int64 { return min(d, r.total) * 10 / r.total }; tenth(r.done) > tenth(before) && r.done < r.total {
		fmt.Fprintf(r.w, "%s: %s\n", r.label, r.statusLocked())
	}
}

// Done ends the task with a summary line: units, time and rate.
func (r *Reporter) Done() {
	if r == nil || r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.finished = true
	r.clearLocked()
	el := r.now().Sub(r.start)
	if r.total > 0 || r.done > 0 {
		fmt.Fprintf(r.w, "%s: done, %s in %s (%s)\n", r.label, r.amount(r.done), el.Round(time.Millisecond), r.rate(el))
	} else {
		fmt.Fprintf(r.w, "%s: done in %s\n", r.label, el.Round(time.Millisecond))
	}
}

// statusLocked is "45% 12.0 MiB/26.7 MiB, 3.1 MiB/s, ETA 5s" or "30% 3/10
// requests, 1.5 requests/s, ETA 5s".
func (r *Reporter) statusLocked() string {
	el := r.now().Sub(r.start)
	pct := min(100, r.done*100/r.total)
	of := r.amount(r.done) + "/" + r.amount(r.total) // 12.0 MiB/26.7 MiB
	if r.unit != "B" {
		of = fmt.Sprintf("%d/%s", r.done, r.amount(r.total)) // 3/10 requests
	}
	s := fmt.Sprintf("%3d%% %s, %s", pct, of, r.rate(el))
	if r.done > 0 && r.done < r.total && el > 0 {
		eta := time.Duration(float64(el) * float64(r.total-r.done) / float64(r.done))
		s += ", ETA " + eta.Round(time.Second).String()
	}
	return s
}

// drawLocked redraws the bar in place; with no known total it is the count,
// the rate and the status, with no ETA to give.
func (r *Reporter) drawLocked() {
	const width = 24
	var line string
	if r.total > 0 {
		fill := int(min(r.done, r.total) * width / r.total)
		line = fmt.Sprintf("%s [%s%s] %s", r.label, strings.Repeat("#", fill), strings.Repeat("-", width-fill), r.statusLocked())
	} else {
		line = fmt.Sprintf("%s %s, %s", r.label, r.amount(r.done), r.rate(r.now().Sub(r.start)))
	}
	if r.status != "" {
		line += " · " + r.status
	}
	pad := max(0, r.lineLen-len(line))
	fmt.Fprintf(r.w, "\r%s%s", line, strings.Repeat(" ", pad))
	r.lineLen = len(line)
}

// clearLocked wipes a drawn bar so a plain line can be printed.
func (r *Reporter) clearLocked() {
	if r.lineLen > 0 {
		fmt.Fprintf(r.w, "\r%s\r", strings.Repeat(" ", r.lineLen))
		r.lineLen = 0
	}
}

func (r *Reporter) amount(n int64) string {
	if r.unit != "B" {
		if r.unit == "" {
			return fmt.Sprint(n)
		}
		return fmt.Sprintf("%d %s", n, r.unit)
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func (r *Reporter) rate(el time.Duration) string {
	if el <= 0 {
		return "- /s"
	}
	per := float64(r.done) / el.Seconds()
	if r.unit == "B" {
		return r.amount(int64(per)) + "/s"
	}
	u := r.unit
	if u == "" {
		u = "units"
	}
	return fmt.Sprintf("%.1f %s/s", per, u)
}
