//go:build !linux

package box

import (
	"errors"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/verify"
)

var errVerifyLinux = errors.New("verify: the checks run in Linux boxes only (bwrap, Landlock)")

func runProbe(q *plan.Plan, b backend.Backend, self string, input []byte) (string, int, error) {
	return "", 0, errVerifyLinux
}

func hostFacts(q *plan.Plan, b backend.Backend) (verify.Host, func(), error) {
	return verify.Host{}, func() {}, errVerifyLinux
}
