package doctor

import "github.com/agentbox/agentbox/winsandbox"

// platformProblems are what keeps the Windows backend's runs from
// starting on this machine, or its accounts from staying hidden: the
// sandbox accounts (deleted, disabled or shown on the sign-in screen by
// endpoint protection or policy), the Secondary Logon service, and the
// logon rights (winsandbox.MachineProblems decides; ReadMachine reads).
func platformProblems() []Problem {
	var out []Problem
	for _, p := range winsandbox.MachineProblems(winsandbox.ReadMachine()) {
		out = append(out, Problem{Problem: p.Problem, Fix: p.Fix})
	}
	return out
}
