package cinit

import _ "embed"

// cInit is the C init for this architecture: cinit/c/init.c, built by
// cinit/c/build.sh (CI rebuilds it and compares the bytes).
//
//go:embed c/init-linux-amd64
var cInit []byte
