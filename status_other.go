//go:build !linux

package main

// rootReadOnly is false where agentbox cannot check it.
func rootReadOnly() bool { return false }
