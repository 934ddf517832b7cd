package api

import "strings"

// stopMatcher finds stop strings in generated text that arrives in pieces.
// Text that could be the start of a stop string is held back until the next
// piece decides it, so a partial stop string is never sent to the client.
type stopMatcher struct {
	stops   []string
	held    string
	stopped bool
}

func newStopMatcher(stops []string) *stopMatcher { return &stopMatcher{stops: stops} }

// Feed adds generated text and returns what may be sent now. After it
// reports stopped, the request is finished and later calls return nothing.
func (m *stopMatcher) Feed(text string) (out string, stopped bool) {
	if m.stopped {
		return "", true
	}
	if len(m.stops) == 0 {
		return text, false
	}
	buf := m.held + text
	// The stop string that completes first wins, as if text arrived one
	// byte at a time; of two completing together, the longer one. So the
	// result does not depend on how text was split into pieces.
	cut, end := -1, -1
	for _, s := range m.stops {
		i := strings.Index(buf, s)
		if i < 0 {
			continue
		}
		if e := i + len(s); end < 0 || e < end || (e == end && i < cut) {
			cut, end = i, e
		}
	}
	if cut >= 0 {
		m.stopped, m.held = true, ""
		return buf[:cut], true
	}
	keep := m.partialSuffix(buf)
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// Flush returns the held text at the end of generation.
func (m *stopMatcher) Flush() string {
	out := m.held
	m.held = ""
	return out
}

// partialSuffix returns the length of the longest suffix of buf that is a
// proper prefix of some stop string.
func (m *stopMatcher) partialSuffix(buf string) int {
	best := 0
	for _, s := range m.stops {
		n := min(len(s)-1, len(buf))
		for ; n > best; n-- {
			if strings.HasSuffix(buf, s[:n]) {
				best = n
				break
			}
		}
	}
	return best
}
