package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag value for memory sizes: a plain byte count or a number
// with a unit (KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers of ten).
type byteSize int64

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
}

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v != v {
		return fmt.Errorf("%q is not a size (try 512MiB or 2GiB)", s)
	}
	if v*mult > 1<<50 {
		return fmt.Errorf("%q is larger than 1 PiB", s)
	}
	*b = byteSize(v * mult)
	return nil
}
