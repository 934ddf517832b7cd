package toolcall

import "strings"

// Harmony (gpt-oss) output is a sequence of messages, each a header and a
// body: [<|start|>assistant]<|channel|>C[ to=functions.N][ <|constrain|>json]
// <|message|>BODY, ended by <|end|>, <|call|>, <|return|> or the next
// <|start|>. A body addressed to functions.N is a call with arguments BODY;
// the analysis channel is the model's reasoning, which OpenAI's API does not
// return as content; any other body (final, commentary preambles) is content.

type harmonyKind int

const (
	harmonyText harmonyKind = iota
	harmonyCall
	harmonyReasoning
)

var harmonyEnds = []string{"<|end|>", "<|call|>", "<|return|>", "<|start|>"}

func (s *Stream) harmony(out []Event, closing bool) []Event {
	for {
		switch s.state {
		case hHeader:
			if s.buf == "" {
				return out
			}
			i := strings.Index(s.buf, "<|message|>")
			if !harmonyHeaderStart(s.buf) || i > maxHeader || (i < 0 && len(s.buf) > maxHeader) {
				// Not a header: the model wrote plain text.
				s.state, s.harmonyKind = hBody, harmonyText
				continue
			}
			if i < 0 {
				if closing {
					return content(out, s.take(len(s.buf)))
				}
				return out
			}
			header := s.take(i)
			s.take(len("<|message|>"))
			s.harmonyKind, s.harmonyName = harmonyHeader(header)
			s.state = hBody
		case hBody:
			j, end := firstOf(s.buf, harmonyEnds)
			if j < 0 && !closing {
				if s.harmonyKind == harmonyText {
					out = content(out, s.take(len(s.buf)-partialSuffix(s.buf, harmonyEnds...)))
				}
				return out
			}
			if j < 0 {
				j = len(s.buf)
			}
			body := s.take(j)
			s.take(len(end))
			switch s.harmonyKind {
			case harmonyText:
				out = content(out, body)
			case harmonyCall:
				if a, ok := argumentsText([]byte(body)); ok {
					out = appendCalls(out, []Call{{Name: s.harmonyName, Arguments: a}})
				} else {
					out = content(out, body)
				}
			}
			s.state = hHeader
		}
	}
}

// harmonyHeaderStart reports whether buf may still become a header: it
// starts with a header's marker or role, or is a prefix of one.
func harmonyHeaderStart(buf string) bool {
	for _, p := range []string{"<|start|>", "<|channel|>", "assistant", " to=", "to="} {
		if strings.HasPrefix(buf, p) || strings.HasPrefix(p, buf) {
			return true
		}
	}
	return false
}

func harmonyHeader(h string) (harmonyKind, string) {
	if _, rest, ok := strings.Cut(h, "to=functions."); ok {
		end := strings.IndexAny(rest, " <\n\t")
		if end < 0 {
			end = len(rest)
		}
		if end > 0 {
			return harmonyCall, rest[:end]
		}
	}
	if strings.Contains(h, "<|channel|>analysis") {
		return harmonyReasoning, ""
	}
	return harmonyText, ""
}

// firstOf finds the earliest of the markers in s.
func firstOf(s string, markers []string) (int, string) {
	best, which := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (best < 0 || i < best) {
			best, which = i, m
		}
	}
	return best, which
}
