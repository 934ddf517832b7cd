package kvcache

import (
	"errors"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

func TestStepPagesComeOnlyFromAPassedCheck(t *testing.T) {
	p, err := New(Config{PageSize: 4, DType: gguf.F32, Layers: 1, KVDim: 1, Tokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	if (StepPages{}).Covers(0, 0) || (StepPages{}).Pages() != nil {
		t.Fatal("the zero StepPages covers positions")
	}
	a, b := p.NewTable(), p.NewTable()
	if err := p.Reserve(a, 8); err != nil {
		t.Fatal(err)
	}
	v, err := p.VerifyStep(nil, a, 0, 8)
	if err != nil || len(v.Pages()) != 2 || v.Owner() != a.Owner() {
		t.Fatalf("verified %v owner %d, err %v", v.Pages(), v.Owner(), err)
	}
	if !v.Covers(0, 8) || v.Covers(0, 7) || v.Covers(1, 7) {
		t.Fatal("StepPages covers positions it was not checked for")
	}
	// b holds no pages: reading a's positions through it fails the check.
	v, err = p.VerifyStep(nil, b, 0, 8)
	if !errors.Is(err, ErrOwnership) || v.Covers(0, 8) || v.Pages() != nil {
		t.Fatalf("a failed check gave %v (covers %v), err %v", v.Pages(), v.Covers(0, 8), err)
	}
	p.Free(a)
	if err := p.CheckDrained(); err != nil {
		t.Fatal(err)
	}
}
