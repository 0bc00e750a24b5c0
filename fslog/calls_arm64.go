//go:build linux

package fslog

// legacyCalls are empty on arm64: it has only the *at path calls.
var legacyCalls = map[uint32]call{}
