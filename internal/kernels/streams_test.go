package kernels

import "testing"

// TestSetRowStreams checks the BULKHEAD_ROW_STREAMS parser: 1 and 2 are
// taken, anything else is refused and leaves the setting as it was.
func TestSetRowStreams(t *testing.T) {
	def := rowStreams
	defer func() { rowStreams = def }()
	for _, v := range []string{"1", "2"} {
		if err := setRowStreams(v); err != nil || RowStreams() != int(v[0]-'0') {
			t.Fatalf("setRowStreams(%q) = %v, rowStreams %d", v, err, RowStreams())
		}
	}
	for _, v := range []string{"", "0", "3", "-1", "two", "1.5"} {
		if err := setRowStreams(v); err == nil || RowStreams() != 2 {
			t.Fatalf("setRowStreams(%q) = %v, rowStreams %d: want an error and 2 kept", v, err, RowStreams())
		}
	}
}
