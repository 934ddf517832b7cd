package incident

import "testing"

// TestStrictIsDefault pins that a build which installs nothing defeats no
// guard: the release binary's behaviour rests on it.
func TestStrictIsDefault(t *testing.T) {
	p := Active()
	if _, ok := p.Placeholder([]int32{1, 2, 3}, 2, 2); ok {
		t.Fatal("default policy admits an oversized prompt")
	}
	if p.PassOversized() || p.SkipWrittenCheck() || p.SkipPrefixCache() {
		t.Fatalf("default policy defeats a guard: %T", p)
	}
}

type loose struct{ Strict }

func (loose) SkipWrittenCheck() bool { return true }

func TestInstall(t *testing.T) {
	defer Install(nil)
	Install(loose{})
	if !Active().SkipWrittenCheck() {
		t.Fatal("installed policy not active")
	}
	Install(nil)
	if Active().SkipWrittenCheck() {
		t.Fatal("Install(nil) did not restore Strict")
	}
}
