package worker

// RejectedHandoffs counts KV frames this decode worker refused because they
// named no live reservation of their connection, and llm-d fetches this
// prefill worker refused (a forged, replayed or expired handle, another
// peer, tenant or prompt). Read by the pod metrics endpoint.
func (w *Worker) RejectedHandoffs() uint64 {
	n := w.handoffRefused.Load()
	if w.recv != nil {
		n += w.recv.Rejected()
	}
	return n
}
