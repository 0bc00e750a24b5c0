package box

import (
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/refusal"
)

// hostDenies is not told on Windows: every refusal gets the box's advice.
func hostDenies(*plan.Plan) refusal.HostDenies { return nil }
