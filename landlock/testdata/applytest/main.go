// Command applytest is the helper of landlock's integration tests: it reads a
// plan from the JSON file named by its first argument, assesses it for the
// running kernel, confines itself with landlock.Apply and execs the rest of
// its arguments, so the tests can watch what real commands may do.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
)

func main() {
	if len(os.Args) < 3 {
		fail(fmt.Errorf("usage: applytest PLAN.json CMD [ARG...]"))
	}
	b, err := os.ReadFile(os.Args[1])
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
	a := landlock.Assess(&p, abi)
	if p.Cwd != "" {
		if err := os.Chdir(p.Cwd); err != nil {
			fail(err)
		}
	}
	env := os.Environ()
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	fail(landlock.Exec(a, os.Args[2:], env))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "applytest: error: %v\n", err)
	os.Exit(125)
}
