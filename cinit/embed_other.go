//go:build !linux

package cinit

// cInit is empty off Linux: there is no box to start an init in.
var cInit []byte
