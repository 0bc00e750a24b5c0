package fslog

import _ "embed"

// The preloaded refusal log for this architecture (preload/preload.c,
// built by preload/build.sh; CI rebuilds it and compares the bytes): for
// x86-64 programs, and for i386 ones that run under emulation (the box's
// seccomp filter kills a native i386 system call).
var (
	//go:embed preload/agentbox-fslog-x86_64.so
	preloadX8664 []byte
	//go:embed preload/agentbox-fslog-i686.so
	preloadI686 []byte
)

// preloadLibraries are the libraries by the platform name the dynamic
// linker puts for $PLATFORM (the kernel's AT_PLATFORM).
var preloadLibraries = map[string][]byte{"x86_64": preloadX8664, "i686": preloadI686}
