package transfer

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on. Errors returned by this package wrap one
// (or two: a peer's abort wraps ErrAborted and the reason it gave).
var (
	ErrLayoutMismatch = errors.New("transfer: model or KV layout mismatch")
	ErrChecksum       = errors.New("transfer: checksum mismatch")
	ErrIncomplete     = errors.New("transfer: incomplete KV")
	ErrTokenCount     = errors.New("transfer: token count differs from the reservation")
	ErrUnknownRequest = errors.New("transfer: unknown or finished request")
	ErrDuplicate      = errors.New("transfer: request already expected")
	ErrDeadline       = errors.New("transfer: deadline exceeded")
	ErrCanceled       = errors.New("transfer: canceled")
	ErrAborted        = errors.New("transfer: aborted by peer")
	ErrConnLost       = errors.New("transfer: connection lost")
	ErrProtocol       = errors.New("transfer: protocol violation")
	ErrClosed         = errors.New("transfer: closed")
)

// wireCodes numbers the sentinels for NACK and ABORT frames. The order is
// part of the wire format: append only.
var wireCodes = []error{
	nil, // 0: unspecified
	ErrLayoutMismatch,
	ErrChecksum,
	ErrIncomplete,
	ErrTokenCount,
	ErrUnknownRequest,
	ErrDeadline,
	ErrCanceled,
	ErrProtocol,
	ErrConnLost,
	ErrClosed,
	ErrDuplicate,
}

// codeOf returns the wire code of the first sentinel err wraps, or 0.
func codeOf(err error) uint16 {
	for i, s := range wireCodes {
		if s != nil && errors.Is(err, s) {
			return uint16(i)
		}
	}
	return 0
}

// sentinelOf maps a wire code back to its sentinel; unknown codes map to
// ErrProtocol so the caller still gets something to branch on.
func sentinelOf(code uint16) error {
	if int(code) < len(wireCodes) && wireCodes[code] != nil {
		return wireCodes[code]
	}
	return ErrProtocol
}

// MismatchError names the first value two peers disagree on: the protocol
// version, the model digest or a KV layout field.
type MismatchError struct {
	Field  string
	Local  string
	Remote string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("transfer: %s differs: local %s, remote %s", e.Field, e.Local, e.Remote)
}

// Unwrap lets errors.Is(err, ErrLayoutMismatch) match.
func (e *MismatchError) Unwrap() error { return ErrLayoutMismatch }
