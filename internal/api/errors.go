package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/tenant"
)

// Error types and codes of the OpenAI error body.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typeRateLimit      = "rate_limit_error"
	typeServer         = "server_error"

	codeContextLength = "context_length_exceeded"
	codeShuttingDown  = "shutting_down"
)

// apiError is a failure answered with an OpenAI-shaped body:
// {"error":{"message","type","param","code"}}.
type apiError struct {
	Status     int
	Message    string
	Type       string
	Param      string
	Code       string
	RetryAfter int    // seconds; sets Retry-After when > 0
	reason     string // rejection metric label
}

func (e *apiError) Error() string { return e.Message }

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	d := errorDetail{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		d.Param = &e.Param
	}
	if e.Code != "" {
		d.Code = &e.Code
	}
	return errorBody{Error: d}
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, e.body())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages quote "<key>" and prompts; they are JSON, not HTML
	b := []byte(`{"error":{"message":"encoding response","type":"server_error","param":null,"code":null}}` + "\n")
	if err := enc.Encode(v); err == nil { // only our own types are marshalled; it cannot fail
		b = buf.Bytes()
	} else {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func invalid(param, code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Param: param, Code: code,
		Message: fmt.Sprintf(format, args...), reason: "invalid_request"}
}

func unauthorized() *apiError {
	return &apiError{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
		Message: "invalid or missing API key: send it as 'Authorization: Bearer <key>'", reason: "unauthorized"}
}

func shuttingDown() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeServer, Code: codeShuttingDown,
		Message: "the server is shutting down; retry on another replica", reason: "shutting_down"}
}

// overloaded answers load (every worker's queue at its bound) with 503 and
// Retry-After, never a 500.
func overloaded(e *engine.OverloadedError) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeServer, Code: "overloaded",
		Message:    "the server is at capacity; retry after the interval in Retry-After",
		RetryAfter: max(1, int((e.RetryAfter+time.Second-1)/time.Second)), reason: "overloaded"}
}

func internalError(requestID string) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: "internal_error",
		Message: "internal server error; request id " + requestID, reason: "internal"}
}

func limitError(le *tenant.LimitError) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: le.Reason,
		Message: le.Error(), RetryAfter: le.RetryAfterSeconds(), reason: le.Reason}
}

func contextLengthError(param string, cle *engine.ContextLengthError) *apiError {
	e := invalid(param, codeContextLength, "%s", cle.Error())
	e.reason = codeContextLength
	return e
}

// engineError maps an error from Submit or a stream's Err event. Internal
// details are logged by the caller, never sent: they might describe state
// that is not the requester's.
func engineError(err error, param, requestID string) *apiError {
	var cle *engine.ContextLengthError
	var ole *engine.OverloadedError
	if e, ok := kvTransferError(err); ok {
		return e
	}
	switch {
	case errors.As(err, &cle):
		return contextLengthError(param, cle)
	case errors.As(err, &ole):
		return overloaded(ole)
	case errors.Is(err, engine.ErrInvalidRequest):
		return invalid("", "invalid_request", "%v", err)
	case errors.Is(err, engine.ErrShuttingDown):
		return shuttingDown()
	default:
		return internalError(requestID)
	}
}
