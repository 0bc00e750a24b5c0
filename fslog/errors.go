package fslog

import "errors"

// errUnsupported is what the log's kernel parts say where they do not
// exist.
var errUnsupported = errors.New("the filesystem log needs Linux on amd64 or arm64")
