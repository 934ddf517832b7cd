package pagemap

import (
	"github.com/bulkhead-llm/bulkhead/internal/engine"
	"github.com/bulkhead-llm/bulkhead/internal/gateway"
)

// GatewaySource is what the gateway view reads from a gateway;
// *gateway.Gateway is one.
type GatewaySource interface {
	Members() []gateway.MemberStatus
	Refusals() []engine.AbortInfo
}

var _ GatewaySource = (*gateway.Gateway)(nil)

// GatewayState is the gateway's own part of its view: every worker with
// its health and drift state as the last check saw it, and the requests
// the gateway refused (drift, rejected handoff, overload), oldest first.
type GatewayState struct {
	Members  []gateway.MemberStatus `json:"members"`
	Refusals []engine.AbortInfo     `json:"refusals"`
}

func snapshotGateway(g GatewaySource) *GatewayState {
	gs := &GatewayState{Members: g.Members(), Refusals: g.Refusals()}
	if gs.Members == nil {
		gs.Members = []gateway.MemberStatus{}
	}
	if gs.Refusals == nil {
		gs.Refusals = []engine.AbortInfo{}
	}
	return gs
}
