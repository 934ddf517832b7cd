package worker

// RejectedHandoffs counts KV frames this decode worker refused because they
// named no live reservation of their connection (0 on a prefill worker).
// Read by the pod metrics endpoint.
func (w *Worker) RejectedHandoffs() uint64 {
	if w.recv == nil {
		return 0
	}
	return w.recv.Rejected()
}
