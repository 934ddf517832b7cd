package audit

// Timing is the cross-tenant prefix-cache timing probe's result.
type Timing struct{}
