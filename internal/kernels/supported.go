package kernels

import (
	"strings"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

// supportedTypes are the weight types bulkhead computes with, in GGML order.
// The types computed through dequantization (dequant.go) are among them.
var supportedTypes = []gguf.Type{
	gguf.F32, gguf.F16, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0,
	gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_NL, gguf.IQ4_XS, gguf.BF16,
}

// Supports reports whether the kernels can multiply by weights of type t.
func Supports(t gguf.Type) bool {
	for _, s := range supportedTypes {
		if s == t {
			return true
		}
	}
	return false
}

// SupportedTypes lists the supported weight types, comma-separated, for
// error messages ("unsupported: … (supported: …)").
func SupportedTypes() string {
	names := make([]string, len(supportedTypes))
	for i, t := range supportedTypes {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}
