package toolcall

import "strings"

// Stream parses an output as it arrives. Text that cannot be part of a
// call goes out at once; text that may begin a call marker is held until
// it is known, so no markup reaches content; a call goes out whole when
// its end is seen (or at Close, for syntaxes that run to the end of the
// output). A call whose body does not parse goes out as content, markup
// included, so nothing the model wrote is lost.
type Stream struct {
	f     Family
	buf   string
	state streamState
	text  bool   // Llama 3: something other than white space was content
	taken string // the marker that opened the current call region

	harmonyKind harmonyKind // Harmony: what the current message body is
	harmonyName string
}

type streamState int

const (
	outside   streamState = iota
	inCall                // after <tool_call> (and the like), before its closer
	toEnd                 // Mistral, Llama 3: after the marker, to the end
	hHeader               // Harmony: a message's header, before <|message|>
	hBody                 // Harmony: a message's body
	maxHeader = 1024      // a Harmony "header" longer than this is text
)

// NewStream starts parsing an output in syntax f. None parses nothing:
// every byte is content.
func NewStream(f Family) *Stream {
	s := &Stream{f: f}
	if f == Harmony {
		s.state = hHeader
	}
	return s
}

func (s *Stream) marker() string {
	switch s.f {
	case Hermes:
		return "<tool_call>"
	case Functionary:
		return "<function="
	case Apriel:
		return "<tool_calls>"
	case Llama3:
		return "<|python_tag|>"
	case Mistral, MistralArgs:
		return "[TOOL_CALLS]"
	}
	return ""
}

// closer ends a call region; "" for the syntaxes that run to the end.
func (s *Stream) closer() string {
	switch s.f {
	case Hermes:
		return "</tool_call>"
	case Functionary:
		return "</function>"
	case Apriel:
		return "</tool_calls>"
	}
	return ""
}

// inner parses a closed region's body.
func (s *Stream) inner(body string) ([]Call, bool) {
	switch s.f {
	case Functionary:
		name, args, ok := strings.Cut(body, ">")
		a, okA := argumentsText([]byte(args))
		if !ok || !toolName.MatchString(name) || !okA {
			return nil, false
		}
		return []Call{{Name: name, Arguments: a}}, true
	case Apriel:
		calls, rest, ok := callsJSON(body, 0)
		return calls, ok && strings.TrimSpace(rest) == ""
	}
	return hermesInner(body)
}

// Feed adds text and returns what is now known.
func (s *Stream) Feed(text string) []Event {
	s.buf += text
	var out []Event
	if s.f == Harmony {
		return s.harmony(out, false)
	}
	m := s.marker()
	for {
		switch s.state {
		case outside:
			if m == "" {
				return content(out, s.take(len(s.buf)))
			}
			if s.f == Llama3 && !s.text {
				t := strings.TrimLeft(s.buf, " \t\r\n")
				if t == "" {
					return out
				}
				if t[0] == '{' { // a bare JSON call must open the output
					s.taken, s.buf, s.state = s.buf[:len(s.buf)-len(t)], t, toEnd
					continue
				}
			}
			if i := strings.Index(s.buf, m); i >= 0 {
				out = content(out, s.take(i))
				s.taken = s.take(len(m))
				s.state = toEnd
				if s.closer() != "" {
					s.state = inCall
				}
				continue
			}
			return content(out, s.take(len(s.buf)-partialSuffix(s.buf, m)))
		case inCall:
			j := strings.Index(s.buf, s.closer())
			if j < 0 {
				return out
			}
			body := s.take(j)
			s.take(len(s.closer()))
			s.state = outside
			if calls, ok := s.inner(body); ok {
				out = appendCalls(out, calls)
			} else {
				out = content(out, s.taken+body+s.closer())
			}
		case toEnd:
			return out
		}
	}
}

// Close ends the output and returns what was held.
func (s *Stream) Close() []Event {
	var out []Event
	if s.f == Harmony {
		return s.harmony(out, true)
	}
	rest := s.take(len(s.buf))
	switch s.state {
	case outside:
		return content(out, rest)
	case inCall:
		// An output may end at EOS right after the call's JSON.
		if calls, ok := s.inner(rest); ok {
			return appendCalls(out, calls)
		}
		return content(out, s.taken+rest)
	}
	var calls []Call
	var after string
	var ok bool
	switch s.f {
	case MistralArgs:
		calls, after, ok = mistralArgs(rest)
		if !ok { // a MistralArgs template may still be answered in the array form
			calls, after, ok = callsJSON(rest, 0)
		}
	case Mistral:
		calls, after, ok = callsJSON(rest, 0)
		if !ok {
			calls, after, ok = mistralArgs(rest)
		}
	default: // Llama 3: calls separated by ";" (its multi-call form) or new lines
		calls, after, ok = callsJSON(rest, ';')
	}
	if !ok {
		return content(out, s.taken+rest)
	}
	return content(appendCalls(out, calls), after)
}

// take removes and returns the first n bytes of the buffer.
func (s *Stream) take(n int) string {
	t := s.buf[:n]
	s.buf = s.buf[n:]
	if strings.TrimSpace(t) != "" {
		s.text = true
	}
	return t
}

func content(out []Event, t string) []Event {
	if t == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].Call == nil {
		out[n-1].Content += t
		return out
	}
	return append(out, Event{Content: t})
}

func appendCalls(out []Event, calls []Call) []Event {
	for i := range calls {
		out = append(out, Event{Call: &calls[i]})
	}
	return out
}

// partialSuffix is the length of the longest end of s that begins one of
// the markers, which must be held back until the next text decides it.
func partialSuffix(s string, markers ...string) int {
	best := 0
	for _, m := range markers {
		for k := min(len(m)-1, len(s)); k > best; k-- {
			if strings.HasSuffix(s, m[:k]) {
				best = k
				break
			}
		}
	}
	return best
}
