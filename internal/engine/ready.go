package engine

import "github.com/bulkhead-llm/bulkhead/internal/model"

// Ready is what the Machine asks its shell to do, as etcd raft's Ready
// does: run a batch, deliver events, answer reservations. Its slices are
// the machine's buffers, valid until Advance.
type Ready struct {
	// Batch is the forward pass to run now, nil when nothing can run. Its
	// result comes back as a StepResultMsg; no other batch is planned
	// before it.
	Batch *Batch
	// Events go to the requests' streams, in order. A Final one is the
	// stream's last: the shell sends it and closes the stream.
	Events []Delivery
	// Replies answer ReserveMsgs: pages granted, or the refusal (the
	// request then has no stream).
	Replies []Reply
}

// Batch is one forward pass. Every Seq's pages are a kvcache.StepPages the
// ownership check (DESIGN I2, kvcache.Pool.VerifyStep) made for exactly
// that Seq's positions when the machine planned it.
type Batch struct {
	Seqs []model.Seq // for Forwarder.Forward, in plan order
	IDs  []uint64    // request of each Seq
	// Pinned are prefill-only requests whose last prompt chunk is in this
	// batch and whose handoff was delivered ahead (a Pinned Delivery): the
	// shell publishes each finished layer to them while the pass runs.
	Pinned []uint64
}

// Delivery is one event for one request's stream.
type Delivery struct {
	ID    uint64
	Event Event
	// Final ends the stream after this event.
	Final bool
	// Pinned marks a handoff delivered before its last chunk is computed:
	// the shell gives it a layer channel (Handoff.Ready) to publish to.
	Pinned bool
}

// Reply answers a reservation: Pages on a grant, Err on a refusal.
type Reply struct {
	ID    uint64
	Pages []int32
	Err   error
}
