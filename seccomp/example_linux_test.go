//go:build linux && (amd64 || arm64)

package seccomp_test

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/agentbox/agentbox/seccomp"
)

// A filter reaches bwrap as an extra file descriptor holding the program.
func ExampleFilter_Memfd() {
	f, err := seccomp.Build([]string{"userns"}) // from [seccomp] allow
	if err != nil {
		fmt.Println(err)
		return
	}
	mfd, err := f.Memfd() // one per bwrap run: bwrap reads it to the end
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mfd.Close()
	cmd := exec.Command("bwrap", "--ro-bind", "/", "/", "--add-seccomp-fd", "3", "--", "true")
	cmd.ExtraFiles = []*os.File{mfd} // ExtraFiles[0] is fd 3
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
	}
}

func ExampleBuild() {
	f, err := seccomp.Build([]string{"ptrace"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range f.Reopened {
		fmt.Printf("reopened %s: %s\n", g.Name, g.Why)
	}
	_, err = seccomp.Build([]string{"nesting"})
	fmt.Println(err)
	// Output:
	// reopened ptrace: reads and writes the memory of other processes in the box, such as the agent CLI holding its API token (reopen for gdb or strace)
	// unknown seccomp group "nesting" (valid: tiocsti, keyring, bpf, perf, userfaultfd, kexec, modules, ptrace, io_uring, other-processes, setuid, userns)
}
