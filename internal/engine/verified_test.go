package engine

import (
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/sched"
)

// A plan item whose pages did not come from the ownership check (no
// kvcache.StepPages for its positions) never reaches the model.
func TestBatchRefusesPagesTheCheckDidNotPass(t *testing.T) {
	m, err := NewMachine(Config{MaxContext: 16, VocabSize: testVocab}, newPool(t, tiny(t), 64, 4), false)
	if err != nil {
		t.Fatal(err)
	}
	forged := &sched.Plan{Items: []sched.Item{{ID: 1, Tokens: []int32{5}, Pos: 0, Pages: []int32{1}}}}
	if err := m.fillBatch(forged); err == nil {
		t.Fatalf("a batch with unverified pages was built: %+v", m.batch.Seqs)
	}
}
