// Package integration runs the real agentbox binary around real commands
// under real bubblewrap and asserts what the kernel did: the write failed
// with EROFS, the denied folder is empty, the other workspace is not there,
// the file written in the workspace is on the host afterwards.
//
// scripts/test.sh runs these tests twice, as root and as an unprivileged
// user, because root and user namespaces behave differently. A test that
// cannot run here skips with the reason; with AGENTBOX_MUST_WORK=1 (set by
// CI) such a skip is a failure.
package integration
