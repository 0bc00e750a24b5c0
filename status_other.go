//go:build !linux

package main

// selfCheck cannot verify anything where agentbox has no such check.
func selfCheck(backend string) (string, bool) {
	return "nothing could be checked on this system", true
}
