package box

import "github.com/agentbox/agentbox/plan"

// unpreparable is "" on Windows: a Windows box holds no agentbox of its own
// to start another box.
func unpreparable(p *plan.Plan) string { return "" }
