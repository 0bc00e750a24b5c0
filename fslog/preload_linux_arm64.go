package fslog

import _ "embed"

// The preloaded refusal log for this architecture (preload/preload.c,
// built by preload/build.sh; CI rebuilds it and compares the bytes).
//
//go:embed preload/agentbox-fslog-aarch64.so
var preloadAarch64 []byte

// preloadLibraries are the libraries by the platform name the dynamic
// linker puts for $PLATFORM (the kernel's AT_PLATFORM). 32-bit ARM programs
// are not covered: the box's seccomp filter kills their system calls.
var preloadLibraries = map[string][]byte{"aarch64": preloadAarch64}
