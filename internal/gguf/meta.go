package gguf

import (
	"errors"
	"fmt"
	"math"
)

// ErrNoKey is returned by the typed accessors when a key is absent, so
// callers can tell "missing, use the default" from "present but wrong".
var ErrNoKey = errors.New("gguf: metadata key not present")

// Value returns the raw value of key.
func (f *File) Value(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// Has reports whether key is present.
func (f *File) Has(key string) bool { _, ok := f.kvIndex[key]; return ok }

// String returns a string value.
func (f *File) String(key string) (string, error) {
	v, ok := f.Value(key)
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("gguf: %s is %T, want string", key, v)
	}
	return s, nil
}

// Int returns an integer value of any integer type, checked to fit an int64.
func (f *File) Int(key string) (int64, error) {
	v, ok := f.Value(key)
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	switch x := v.(type) {
	case uint8:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("gguf: %s = %d overflows int64", key, x)
		}
		return int64(x), nil
	}
	return 0, fmt.Errorf("gguf: %s is %T, want an integer", key, v)
}

// Float returns a float value (float32, float64 or an integer).
func (f *File) Float(key string) (float64, error) {
	v, ok := f.Value(key)
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	switch x := v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	n, err := f.Int(key)
	if err != nil {
		return 0, fmt.Errorf("gguf: %s is %T, want a number", key, v)
	}
	return float64(n), nil
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, error) {
	v, ok := f.Value(key)
	if !ok {
		return false, fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("gguf: %s is %T, want bool", key, v)
	}
	return b, nil
}

func (f *File) array(key string) (Array, error) {
	v, ok := f.Value(key)
	if !ok {
		return Array{}, fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	a, ok := v.(Array)
	if !ok {
		return Array{}, fmt.Errorf("gguf: %s is %T, want an array", key, v)
	}
	return a, nil
}

// Strings returns an array of strings.
func (f *File) Strings(key string) ([]string, error) {
	a, err := f.array(key)
	if err != nil {
		return nil, err
	}
	s, ok := a.Values.([]string)
	if !ok {
		return nil, fmt.Errorf("gguf: %s is an array of %s, want string", key, a.Elem)
	}
	return s, nil
}

// Float32s returns an array of float32 (float64 arrays are converted).
func (f *File) Float32s(key string) ([]float32, error) {
	a, err := f.array(key)
	if err != nil {
		return nil, err
	}
	switch v := a.Values.(type) {
	case []float32:
		return v, nil
	case []float64:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out, nil
	}
	return nil, fmt.Errorf("gguf: %s is an array of %s, want float32", key, a.Elem)
}

// Int32s returns an array of integers as int32, checking each fits.
func (f *File) Int32s(key string) ([]int32, error) {
	a, err := f.array(key)
	if err != nil {
		return nil, err
	}
	out := make([]int32, a.Len())
	bad := -1
	set := func(i int, x int64) {
		if x < math.MinInt32 || x > math.MaxInt32 {
			bad = i
		}
		out[i] = int32(x)
	}
	switch v := a.Values.(type) {
	case []int32:
		return v, nil
	case []uint8:
		for i, x := range v {
			set(i, int64(x))
		}
	case []int8:
		for i, x := range v {
			set(i, int64(x))
		}
	case []uint16:
		for i, x := range v {
			set(i, int64(x))
		}
	case []int16:
		for i, x := range v {
			set(i, int64(x))
		}
	case []uint32:
		for i, x := range v {
			set(i, int64(x))
		}
	case []int64:
		for i, x := range v {
			set(i, x)
		}
	case []uint64:
		for i, x := range v {
			if x > math.MaxInt32 {
				bad = i
			}
			out[i] = int32(x)
		}
	default:
		return nil, fmt.Errorf("gguf: %s is an array of %s, want integers", key, a.Elem)
	}
	if bad >= 0 {
		return nil, fmt.Errorf("gguf: %s[%d] does not fit an int32", key, bad)
	}
	return out, nil
}

// Architecture returns general.architecture.
func (f *File) Architecture() (string, error) { return f.String("general.architecture") }
