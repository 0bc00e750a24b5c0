//go:build linux && !amd64 && !arm64

package cinit

// cInit is empty where no C init is built: agentbox's own init (the Go
// one, agentbox __init) runs in the box instead, with the same arguments
// and behaviour.
var cInit []byte
