// Command applytest is the helper of landlock's integration tests: it reads a
// plan from the JSON file named by its first argument, assesses it for the
// running kernel, confines itself with landlock.Apply and execs the rest of
// its arguments, so the tests can watch what real commands may do.
//
//	applytest [-keep-roots-writable] PLAN.json CMD [ARG...]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
)

func main() {
	args := os.Args[1:]
	var opts landlock.Options
	if len(args) > 0 && args[0] == "-keep-roots-writable" {
		opts.KeepRootsWritable = true
		args = args[1:]
	}
	if len(args) < 2 {
		fail(fmt.Errorf("usage: applytest [-keep-roots-writable] PLAN.json CMD [ARG...]"))
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fail(err)
	}
	var p plan.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		fail(err)
	}
	abi, err := landlock.ABI()
	if err != nil {
		fail(err)
	}
	a := landlock.AssessWith(&p, abi, opts)
	if p.Cwd != "" {
		if err := os.Chdir(p.Cwd); err != nil {
			fail(err)
		}
	}
	env := os.Environ()
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	if err := landlock.Apply(a); err != nil {
		fail(err)
	}
	bin, err := exec.LookPath(args[1])
	if err != nil {
		fail(err)
	}
	fail(syscall.Exec(bin, args[1:], env))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "applytest: error: %v\n", err)
	os.Exit(125)
}
