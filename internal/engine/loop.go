package engine

import "time"

// loop is the machine's shell, the one goroutine that touches it: it moves
// mailbox messages into Step, delivers what Ready says, runs the model on
// Ready's batch and steps the result back in, and sleeps when there is
// nothing to run. It makes no decision of its own about a request.
func (e *Engine) loop() {
	defer close(e.done)
	var spare []mail
	var grace *time.Timer
	var graceC <-chan time.Time
	for {
		spare = e.intake(spare)
		if grace == nil && e.m.Closing() {
			grace = time.NewTimer(e.cfg.CloseGrace)
			defer grace.Stop()
			graceC = grace.C
		}
		rd := e.m.Ready()
		e.refreshStats() // before output: whoever hears of a change sees it in Stats
		e.output(rd)
		batch := rd.Batch
		e.m.Advance()
		if batch != nil {
			e.res.Logits, e.res.Err = e.forward(batch)
			e.m.Step(&e.res)
			e.res = StepResultMsg{}
			continue
		}
		if graceC != nil && e.m.Tracked() == 0 {
			e.exit()
			return
		}
		select {
		case <-e.wake:
		case <-graceC:
			e.exit()
			return
		}
	}
}

// intake steps every message posted since the last call, in order. It
// swaps the mailbox with spare so that steady state allocates nothing.
func (e *Engine) intake(spare []mail) []mail {
	e.mu.Lock()
	box := e.mailbox
	e.mailbox = spare[:0]
	e.mu.Unlock()
	for _, ml := range box {
		e.take(ml)
	}
	clear(box)
	return box[:0]
}

// take steps one mailbox entry into the machine.
func (e *Engine) take(ml mail) {
	if ml.status != nil {
		st := e.m.Status()
		st.Stats = e.Stats()
		ml.status <- st
		return
	}
	if ml.st != nil {
		e.streams[ml.id] = ml.st
	}
	e.m.Step(ml.msg)
}

// output delivers a Ready's events and reservation replies.
func (e *Engine) output(rd Ready) {
	for _, d := range rd.Events {
		st := e.streams[d.ID]
		if st == nil {
			continue
		}
		ev := d.Event
		if d.Pinned {
			st.ready = make(chan int, 1)
			ev.ready = st.ready
		}
		if d.Final {
			delete(e.streams, d.ID)
			st.stop()
			if st.ready != nil {
				// A transfer still waiting for layers fails as incomplete.
				close(st.ready)
			}
			st.events <- ev
			close(st.events)
			continue
		}
		st.events <- ev
	}
	for _, r := range rd.Replies {
		st := e.streams[r.ID]
		if st == nil {
			continue
		}
		st.reply <- reserveReply{pages: r.Pages, err: r.Err}
		if r.Err != nil { // refused: the request never existed
			delete(e.streams, r.ID)
			st.stop()
		}
	}
}

// forward runs a batch, publishing layer progress to its pinned handoffs.
func (e *Engine) forward(b *Batch) ([][]float32, error) {
	if len(b.Pinned) == 0 {
		return e.fwd.Forward(e.pool, b.Seqs)
	}
	e.layers = e.layers[:0]
	for _, id := range b.Pinned {
		if st := e.streams[id]; st != nil && st.ready != nil {
			e.layers = append(e.layers, st.ready)
		}
	}
	return e.fwd.(layerForwarder).ForwardLayers(e.pool, b.Seqs, func(n int) {
		for _, ch := range e.layers {
			select { // keep only the newest count; the shell is the only sender
			case <-ch:
			default:
			}
			ch <- n
		}
	})
}

// exit ends what Close left once transfers reported or the grace passed,
// then answers whatever was posted before the shell stops listening.
func (e *Engine) exit() {
	e.m.Step(&GraceOverMsg{})
	e.mu.Lock()
	e.exited = true
	rest := e.mailbox
	e.mailbox = nil
	e.mu.Unlock()
	for _, ml := range rest {
		e.take(ml)
	}
	rd := e.m.Ready()
	e.refreshStats()
	e.output(rd)
	e.m.Advance()
}

// refreshStats publishes a snapshot for Stats.
func (e *Engine) refreshStats() {
	st := e.m.Stats()
	e.mu.Lock()
	e.stats = st
	e.mu.Unlock()
}
