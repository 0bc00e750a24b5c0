package mount

import _ "embed"

// cInit is the C init for this architecture: mount/cinit/init.c, built by
// mount/cinit/build.sh (CI rebuilds it and compares the bytes).
//
//go:embed cinit/init-linux-amd64
var cInit []byte
