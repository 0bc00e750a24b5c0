package netproxy

import (
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// OptionsFor returns the options a plan's network gives every backend's
// proxy: the upstream proxy and its credentials. The backend adds its log,
// its forwards and where decisions go.
func OptionsFor(n plan.Network) Options {
	var o Options
	if u := n.Upstream; u != nil {
		o.Upstream = &Upstream{Addr: strings.TrimPrefix(u.URL, "http://"), Credentials: u.Credentials, NoProxy: u.NoProxy}
	}
	return o
}
