package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Outcome classifies how one request ended, before its content is judged.
type Outcome string

const (
	OutcomeOK          Outcome = "ok"           // 200 and a complete answer
	OutcomeRejected    Outcome = "rejected"     // a 4xx status
	OutcomeServerError Outcome = "server-error" // a 5xx (or other non-2xx) status
	OutcomeStreamError Outcome = "stream-error" // the stream ended with an error event
	OutcomeStreamCut   Outcome = "stream-cut"   // the stream ended without [DONE] or an error event
	OutcomeMalformed   Outcome = "malformed"    // the body or a stream event did not parse
	OutcomeConnection  Outcome = "connection"   // the request never got a response
	OutcomeTimeout     Outcome = "timeout"      // the request ran past its deadline
)

// reply is what the server said, reduced to what the verdict needs.
type reply struct {
	Status       int
	Outcome      Outcome
	Text         string
	FinishReason string
	ErrCode      string // the error body's code or type, when there is one
	ErrMessage   string
	Detail       string // why a body was malformed or a request failed
}

// maxBody bounds how much of a non-streaming body is read.
const maxBody = 64 << 20

// choice covers the three shapes answers come in: a completion's text, a
// chat message and a chat stream delta.
type choice struct {
	Text    *string `json:"text"`
	Message *struct {
		Content *string `json:"content"`
	} `json:"message"`
	Delta *struct {
		Content *string `json:"content"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// answer is a completion, chat completion or stream chunk. Error is set by
// servers that report failures inside a 200 body or a stream event.
type answer struct {
	Object  string          `json:"object"`
	Choices []choice        `json:"choices"`
	Error   json.RawMessage `json:"error"`
}

// isError reports whether an answer is really an error: OpenAI's "error"
// member, or vLLM's flat {"object":"error"} shape.
func (a answer) isError() bool {
	return a.Object == "error" || len(a.Error) > 0 && !bytes.Equal(a.Error, []byte("null"))
}

// errorBody covers OpenAI's {"error":{...}} and vLLM's older flat shape.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type errorDetail struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseError extracts a code and message from an error body; ok is false
// when the body is not a recognisable error.
func parseError(body []byte) (code, msg string, ok bool) {
	var eb errorBody
	if json.Unmarshal(body, &eb) != nil {
		return "", "", false
	}
	d := errorDetail{Message: eb.Message, Type: eb.Type, Code: eb.Code}
	if len(eb.Error) > 0 && !bytes.Equal(eb.Error, []byte("null")) {
		var s string
		if json.Unmarshal(eb.Error, &s) == nil {
			d = errorDetail{Message: s}
		} else if json.Unmarshal(eb.Error, &d) != nil {
			return "", "", false
		}
	}
	code = rawCode(d.Code)
	if code == "" {
		code = d.Type
	}
	if code == "" && d.Message == "" {
		return "", "", false
	}
	return code, d.Message, true
}

// rawCode renders a JSON code that may be a string or a number.
func rawCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// appendChoices adds the text of every choice to sb and returns the last
// finish reason seen.
func appendChoices(sb *strings.Builder, cs []choice, finish string) string {
	for _, c := range cs {
		switch {
		case c.Text != nil:
			sb.WriteString(*c.Text)
		case c.Message != nil && c.Message.Content != nil:
			sb.WriteString(*c.Message.Content)
		case c.Delta != nil && c.Delta.Content != nil:
			sb.WriteString(*c.Delta.Content)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			finish = *c.FinishReason
		}
	}
	return finish
}

// parseBody classifies a complete (non-streaming) response body.
func parseBody(status int, body []byte) reply {
	r := reply{Status: status}
	if status < 200 || status > 299 {
		r.Outcome = OutcomeServerError
		if status >= 400 && status < 500 {
			r.Outcome = OutcomeRejected
		}
		var ok bool
		r.ErrCode, r.ErrMessage, ok = parseError(body)
		if !ok {
			r.Detail = "error body is not an OpenAI-style error: " + snippet(body)
		}
		return r
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		r.Outcome = OutcomeMalformed
		r.Detail = fmt.Sprintf("body is not JSON (%v): %s", err, snippet(body))
		return r
	}
	if a.isError() {
		r.Outcome = OutcomeServerError
		r.ErrCode, r.ErrMessage, _ = parseError(body)
		r.Detail = "status 200 with an error body"
		return r
	}
	if len(a.Choices) == 0 {
		r.Outcome = OutcomeMalformed
		r.Detail = "answer has no choices: " + snippet(body)
		return r
	}
	var sb strings.Builder
	r.FinishReason = appendChoices(&sb, a.Choices, "")
	r.Text = sb.String()
	r.Outcome = OutcomeOK
	return r
}

// errStreamDone ends the event loop once [DONE] or an error arrives.
var errStreamDone = errors.New("stream done")

// parseStream reads a server-sent event stream of completion chunks. It
// returns OutcomeOK only when the stream ends with "data: [DONE]"; an
// error event (event: error, or a chunk carrying "error") gives
// OutcomeStreamError, and a stream that simply stops gives
// OutcomeStreamCut, whatever text arrived before.
func parseStream(status int, body io.Reader) reply {
	r := reply{Status: status}
	var sb strings.Builder
	var event string
	var data []string
	dispatch := func() error {
		defer func() { event, data = "", nil }()
		if len(data) == 0 {
			return nil
		}
		payload := strings.Join(data, "\n")
		if strings.TrimSpace(payload) == "[DONE]" {
			r.Outcome = OutcomeOK
			return errStreamDone
		}
		var a answer
		if err := json.Unmarshal([]byte(payload), &a); err != nil {
			if event == "error" {
				r.Outcome, r.ErrMessage = OutcomeStreamError, payload
				return errStreamDone
			}
			r.Outcome = OutcomeMalformed
			r.Detail = fmt.Sprintf("stream event is not JSON (%v): %s", err, snippet([]byte(payload)))
			return errStreamDone
		}
		if event == "error" || a.isError() {
			r.Outcome = OutcomeStreamError
			r.ErrCode, r.ErrMessage, _ = parseError([]byte(payload))
			return errStreamDone
		}
		r.FinishReason = appendChoices(&sb, a.Choices, r.FinishReason)
		return nil
	}
	br := bufio.NewReaderSize(body, 64<<10)
	var readErr error
	for {
		line, err := br.ReadString('\n')
		if err != nil && (line == "" || err != io.EOF) {
			readErr = err
			break
		}
		line = strings.TrimRight(line, "\r\n")
		var stop error
		switch {
		case line == "":
			stop = dispatch()
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = append(data, value)
			case "error":
				// llama.cpp reports a failure as a non-standard
				// "error: {...}" line.
				event, data = "error", []string{value}
				stop = dispatch()
			}
		}
		if stop != nil {
			r.Text = sb.String()
			return r
		}
		if err != nil {
			readErr = err
			break
		}
	}
	r.Text = sb.String()
	if len(data) > 0 && strings.TrimSpace(strings.Join(data, "\n")) == "[DONE]" {
		// [DONE] without the blank line that should follow it: accept.
		r.Outcome = OutcomeOK
		return r
	}
	r.Outcome = OutcomeStreamCut
	if readErr != nil && readErr != io.EOF {
		r.Detail = "stream read failed before [DONE]: " + readErr.Error()
	} else {
		r.Detail = "stream ended without [DONE] or an error event"
	}
	return r
}

// snippet shortens a body for a message.
func snippet(b []byte) string {
	const n = 120
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}
