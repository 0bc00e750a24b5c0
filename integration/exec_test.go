//go:build linux

package integration

import "os/exec"

type execCmd = exec.Cmd

func newExecCmd(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }
