// Package proctest is for tests that start processes: it gives what they
// start the default signal dispositions whatever the test binary inherited
// (nohup, a shell's &), bounds every read and wait by a deadline, and makes
// sure nothing a test starts outlives it. Only tests import it.
package proctest
