package winsandbox

import "testing"

func TestMachine(t *testing.T) {
	type step struct {
		d  Direction
		t  Type
		ok bool
	}
	c := func(t Type, ok bool) step { return step{FromClient, t, ok} }
	r := func(t Type, ok bool) step { return step{FromRunner, t, ok} }
	for _, tc := range []struct {
		name  string
		steps []step
		final State
	}{
		{"normal run", []step{c(TypeSpawn, true), r(TypeReady, true), c(TypeStdin, true), r(TypeOutput, true),
			c(TypeResize, true), c(TypeCloseStdin, true), r(TypeOutput, true), r(TypeExit, true)}, Exited},
		{"spawn fails", []step{c(TypeSpawn, true), r(TypeError, true)}, Errored},
		{"error while running", []step{c(TypeSpawn, true), r(TypeReady, true), r(TypeError, true)}, Errored},
		{"terminate before spawn", []step{c(TypeTerminate, true), c(TypeSpawn, true)}, Starting},
		{"terminate while starting and running", []step{c(TypeSpawn, true), c(TypeTerminate, true), r(TypeReady, true), c(TypeTerminate, true), r(TypeExit, true)}, Exited},
		{"stdin before spawn", []step{c(TypeStdin, false)}, Waiting},
		{"resize before spawn", []step{c(TypeResize, false)}, Waiting},
		{"close-stdin before spawn", []step{c(TypeCloseStdin, false)}, Waiting},
		{"second spawn", []step{c(TypeSpawn, true), c(TypeSpawn, false)}, Starting},
		{"stdin while starting is queued", []step{c(TypeSpawn, true), c(TypeStdin, true)}, Starting},
		{"stdin after close-stdin", []step{c(TypeSpawn, true), r(TypeReady, true), c(TypeCloseStdin, true), c(TypeStdin, false)}, Running},
		{"close-stdin twice", []step{c(TypeSpawn, true), r(TypeReady, true), c(TypeCloseStdin, true), c(TypeCloseStdin, false)}, Running},
		{"ready without spawn", []step{r(TypeReady, false)}, Waiting},
		{"output before ready", []step{c(TypeSpawn, true), r(TypeOutput, false)}, Starting},
		{"exit before ready", []step{c(TypeSpawn, true), r(TypeExit, false)}, Starting},
		{"error before spawn", []step{r(TypeError, true)}, Errored},
		{"ready twice", []step{c(TypeSpawn, true), r(TypeReady, true), r(TypeReady, false)}, Running},
		{"output after exit", []step{c(TypeSpawn, true), r(TypeReady, true), r(TypeExit, true), r(TypeOutput, false)}, Exited},
		{"exit after error", []step{c(TypeSpawn, true), r(TypeError, true), r(TypeExit, false)}, Errored},
		{"client races exit", []step{c(TypeSpawn, true), r(TypeReady, true), r(TypeExit, true), c(TypeStdin, true), c(TypeResize, true), c(TypeTerminate, true), c(TypeCloseStdin, true)}, Exited},
		{"runner sends client messages", []step{r(TypeSpawn, false), r(TypeStdin, false), r(TypeTerminate, false)}, Waiting},
		{"client sends runner messages", []step{c(TypeSpawn, true), c(TypeReady, false), c(TypeOutput, false), c(TypeExit, false), c(TypeError, false)}, Starting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Machine
			for i, s := range tc.steps {
				before := m
				err := m.Apply(s.d, s.t)
				if (err == nil) != s.ok {
					t.Fatalf("step %d (%s %s in %s): err = %v, want ok=%v", i, s.d, s.t, before.State, err, s.ok)
				}
				if err != nil && m != before {
					t.Fatalf("step %d: a refused message moved the machine from %+v to %+v", i, before, m)
				}
			}
			if m.State != tc.final {
				t.Errorf("final state %s, want %s", m.State, tc.final)
			}
		})
	}
}
