package doctor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base is a healthy machine; each case of TestDiagnose breaks one thing.
func base() Report {
	return Report{
		OS: "linux", UID: 1000,
		Bwrap:    Bwrap{Path: "/usr/bin/bwrap", Version: "bubblewrap 0.9.0", Works: true, NetworkNone: true},
		UserNS:   UserNS{Sysctls: map[string]string{sysctlMaxUserns: "63000"}, Works: true},
		Landlock: Landlock{ABI: 6},
		Seccomp:  Seccomp{Available: true},
		Cgroup:   Cgroup{V2: true, Layout: "unified"},
		Auto:     Auto{Backend: "bwrap"},
	}
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Report)
		want  []string // substrings of each problem, in order
		fixes []string // substrings the first problem's fix must hold
	}{
		{"healthy", func(*Report) {}, nil, nil},
		{"ubuntu 24.04: apparmor restricts user namespaces", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: setting up uid map: Permission denied"
			r.Bwrap.NetworkNone = false
			r.AppArmor = AppArmor{Enabled: true, RestrictUserns: "1"}
			r.UserNS.Sysctls[sysctlAppArmorUsern] = "1"
			r.Auto.Backend = "landlock"
		}, []string{"AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04's default"}, []string{
			"profile bwrap /usr/bin/bwrap flags=(unconfined) {", "  userns,", "abi <abi/4.0>,", "include <tunables/global>",
			"apparmor_parser -r /etc/apparmor.d/bwrap", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
		}},
		{"apparmor restricts, a bwrap profile without userns", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: setting up uid map: Permission denied"
			r.AppArmor = AppArmor{Enabled: true, RestrictUserns: "1", BwrapProfile: "bwrap (enforce)"}
			r.Auto.Backend = "landlock"
		}, []string{"the loaded profile bwrap (enforce) names bwrap but does not let it make them (that needs the rule userns,)"},
			[]string{"apparmor_parser -r /etc/apparmor.d/bwrap"}},
		{"no bwrap", func(r *Report) {
			r.Bwrap = Bwrap{}
			r.Auto.Backend = "landlock"
		}, []string{"not installed"}, []string{"apt install bubblewrap"}},
		{"max_user_namespaces is 0", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: Creating new namespace failed: No space left on device"
			r.UserNS.Sysctls[sysctlMaxUserns] = "0"
		}, []string{"user.max_user_namespaces is 0"}, []string{"sysctl -w user.max_user_namespaces="}},
		{"a chroot, with user namespaces allowed", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces."
			r.UserNS.Sysctls[sysctlMaxUserns] = "63000"
			r.Container = Container{Chroot: true}
			r.Auto.Backend = "landlock"
		}, []string{"agentbox runs in a chroot, where the kernel refuses new user namespaces"}, []string{"run agentbox outside the chroot"}},
		{"setuid bwrap in a container", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap cannot create a sandbox: --cap-add in setuid mode can be used only by root"
			r.Container = Container{Detected: true, Kind: "docker"}
		}, []string{"this bwrap is setuid root"}, []string{"chmod u-s"}},
		{"debian knob", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: No permissions to creating new namespace"
			r.UserNS.Sysctls[sysctlUsernsClone] = "0"
		}, []string{"unprivileged_userns_clone is 0"}, []string{"kernel.unprivileged_userns_clone=1"}},
		{"container", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: Creating new namespace failed: Operation not permitted"
			r.Container = Container{Detected: true, Kind: "docker"}
		}, []string{"docker container"}, []string{"seccomp=unconfined"}},
		{"loopback", func(r *Report) {
			r.Bwrap.NetworkNone, r.Bwrap.NetworkNoneError = false, "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"
		}, []string{"--unshare-net fails"}, []string{"landlock backend"}},
		{"old kernel, nothing works", func(r *Report) {
			r.Bwrap = Bwrap{}
			r.Landlock = Landlock{Error: "no landlock"}
			r.Seccomp = Seccomp{Error: "EINVAL"}
			r.Cgroup = Cgroup{Layout: "legacy"}
			r.Auto.Backend = "none"
		}, []string{"not installed", "Landlock is not available", "seccomp", "no backend"}, []string{"bubblewrap"}},
		// A machine without cgroup v2 runs every policy without [limits]
		// as well as any other: no problem to fix.
		{"cgroup v1 only", func(r *Report) { r.Cgroup = Cgroup{Layout: "legacy"} }, nil, nil},
		{"landlock without TCP", func(r *Report) { r.Landlock.ABI = 3 }, []string{"cannot restrict TCP"}, []string{"6.7"}},
		// A root container without cgroup delegation (most CI
		// containers): the examples' process limit cannot hold there.
		{"container without cgroup delegation", func(r *Report) {
			r.UID = 0
			r.Container = Container{Detected: true, Kind: "docker"}
			r.Cgroup = Cgroup{V2: true, Layout: "unified", Path: "/", Top: true,
				Pids: "unavailable: the pids controller is not enabled for /sys/fs/cgroup, the top of this cgroup namespace"}
		}, []string{"[limits] processes cannot be enforced here"}, []string{"--pids-limit"}},
		// Its own cgroup, delegated: nothing to say.
		{"namespace top with pids", func(r *Report) {
			r.Cgroup = Cgroup{V2: true, Layout: "unified", Path: "/", Top: true, Pids: "cgroup v2 under /sys/fs/cgroup"}
		}, nil, nil},
		// Not the top of a namespace: only a policy with [limits] needs a
		// cgroup, and plan says what it gets.
		{"parent does not delegate", func(r *Report) {
			r.Cgroup = Cgroup{V2: true, Layout: "unified", Path: "/user.slice", Pids: "unavailable: its parent does not delegate it"}
		}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.edit(&r)
			got := diagnose(r)
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Problem, w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i].Problem, w)
				}
				if got[i].Fix == "" {
					t.Errorf("problem %q has no fix", got[i].Problem)
				}
			}
			for _, f := range tc.fixes {
				if !strings.Contains(got[0].Fix, f) {
					t.Errorf("fix %q lacks %q", got[0].Fix, f)
				}
			}
			if strings.Contains(tc.name, "apparmor") && got[0].TradeOff == "" {
				t.Error("the AppArmor fix must state its trade-off")
			}
		})
	}
}

// TestText checks that the readable report names every fact and prints
// every problem with its fix.
func TestText(t *testing.T) {
	r := base()
	r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: setting up uid map: Permission denied"
	r.AppArmor = AppArmor{Enabled: true, RestrictUserns: "1"}
	r.Auto = Auto{Backend: "landlock", Reason: "the first backend that is available here", Passed: []string{"bwrap: bwrap cannot create a sandbox: setting up uid map: Permission denied"}}
	r.Problems = diagnose(r)
	var b bytes.Buffer
	r.Text(&b)
	out := b.String()
	for _, want := range []string{"bwrap ", "user ns", "apparmor", "landlock     ABI 6", "seccomp", "cgroup", "container",
		"auto         landlock", "passed over bwrap: bwrap cannot create a sandbox: setting up uid map", "problems", "fix: either", "trade-off:"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if diff := cmp.Diff(len(r.Problems), strings.Count(out, "\n- ")); diff != "" {
		t.Errorf("problems printed (-want +got):\n%s", diff)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden pins what `agentbox doctor` and `doctor --json` print for a
// fixed machine: the JSON is a contract (its "schema" changes when a field
// changes meaning or goes).
func TestGolden(t *testing.T) {
	r := base()
	r.Schema = Schema
	r.Kernel = "6.1.0"
	r.Bwrap = Bwrap{}
	r.UserNS.Sysctls[sysctlUsernsClone] = "1"
	r.Cgroup = Cgroup{Layout: "legacy", Pids: "cgroup v1 under /sys/fs/cgroup/pids", Memory: "unavailable: no memory controller"}
	r.Auto = Auto{Backend: "landlock", Reason: "the first backend that is available here", Passed: []string{"bwrap: bubblewrap (bwrap) is not installed or not on PATH"}}
	r.Problems = diagnose(r)
	var text, js bytes.Buffer
	r.Text(&text)
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"report.txt.golden": text.String(), "report.json.golden": js.String()} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// BwrapCause decides as diagnose does; a run's notice uses it. Under a
// masked /proc bwrap's message ends in "Operation not permitted" while
// user namespaces work: the cause is the /proc, not the namespaces.
func TestBwrapCause(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Report)
		want Cause
	}{
		{"healthy", func(*Report) {}, CauseNone},
		{"no bwrap", func(r *Report) { r.Bwrap = Bwrap{} }, CauseMissing},
		{"apparmor", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: setting up uid map: Permission denied"
			r.AppArmor = AppArmor{Enabled: true, RestrictUserns: "1"}
		}, CauseAppArmor},
		{"apparmor does not restrict root", func(r *Report) {
			r.UID = 0
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: something else"
			r.AppArmor = AppArmor{Enabled: true, RestrictUserns: "1"}
		}, CauseOther},
		{"max_user_namespaces", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: Creating new namespace failed: No space left on device"
			r.UserNS.Sysctls[sysctlMaxUserns] = "0"
		}, CauseMaxUserns},
		{"chroot", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: No permissions to create new namespace"
			r.Container = Container{Chroot: true}
		}, CauseChroot},
		{"setuid bwrap in a container", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap cannot create a sandbox: --cap-add in setuid mode can be used only by root"
			r.Container = Container{Detected: true, Kind: "docker"}
		}, CauseSetuid},
		{"debian knob", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: No permissions to creating new namespace"
			r.UserNS.Sysctls[sysctlUsernsClone] = "0"
		}, CauseUsernsClone},
		{"masked /proc in a container", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap cannot create a sandbox: Can't mount proc on /newroot/proc: Operation not permitted"
			r.Container = Container{Detected: true, Kind: "kubepods"}
			r.Proc = Proc{Masked: []string{"/proc/bus (proc)"}}
		}, CauseProcMasked},
		{"container", func(r *Report) {
			r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: Creating new namespace failed: Operation not permitted"
			r.Container = Container{Detected: true, Kind: "docker"}
		}, CauseContainer},
		{"anything else", func(r *Report) { r.Bwrap.Works, r.Bwrap.Error = false, "bwrap: execvp true: No such file or directory" }, CauseOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.edit(&r)
			if got := BwrapCause(r); got != tc.want {
				t.Errorf("BwrapCause = %d (%s), want %d (%s)", got, got.Short(), tc.want, tc.want.Short())
			}
		})
	}
	if CauseProcMasked.Short() == CauseMaxUserns.Short() || strings.Contains(CauseProcMasked.Short(), "namespaces") {
		t.Errorf("a masked /proc is told as %q", CauseProcMasked.Short())
	}
}

// TestLimitsProblem: what doctor says of a cgroup namespace's top cgroup
// with no pids controller to use, from the facts alone: the container
// without delegation, that [limits] processes cannot be enforced (as root
// not at all), and what to do.
func TestLimitsProblem(t *testing.T) {
	const reason = "the pids controller is not enabled for /sys/fs/cgroup, the top of this cgroup namespace (cgroup.controllers: \"memory\"): " +
		"whoever made the namespace (a container runtime) delegates no pids to it"
	const fix = "limit the whole container instead: docker run --pids-limit N, podman run --pids-limit N (Kubernetes: the kubelet's podPidsLimit); " +
		"or give the container a cgroup it may divide (a writable cgroup2 mount, and an entrypoint that moves its own processes into a child " +
		"cgroup and enables +pids in the top's cgroup.subtree_control); " +
		"or take [limits] processes out of the policy (examples/ci.toml leaves it out); [limits] memory falls back to RLIMIT_AS"
	tests := []struct {
		name string
		uid  int
		kind string
		top  bool
		pids string
		want string // the problem; "" for none
	}{
		{"root in docker", 0, "docker", true, "unavailable: " + reason,
			"a policy's [limits] processes cannot be enforced here: agentbox runs in the top cgroup of its cgroup namespace " +
				"(a docker container without cgroup delegation), whose parent is out of reach, and the box's own cgroup cannot be made in it (" +
				reason + "); as root there is no fallback: the kernel never applies RLIMIT_NPROC to root"},
		{"a user, container kind unknown", 1000, "", true, "unavailable: " + reason,
			"a policy's [limits] processes cannot be enforced here: agentbox runs in the top cgroup of its cgroup namespace " +
				"(a container without cgroup delegation), whose parent is out of reach, and the box's own cgroup cannot be made in it (" +
				reason + "); the fallback, RLIMIT_NPROC, counts every process of uid 1000, not only the box's"},
		{"delegated", 0, "docker", true, "cgroup v2 under /sys/fs/cgroup", ""},
		{"not a namespace top", 0, "", false, "unavailable: its parent does not delegate it", ""},
		{"not probed", 0, "docker", true, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			r.UID = tc.uid
			r.Container = Container{Detected: tc.kind != "", Kind: tc.kind}
			r.Cgroup = Cgroup{V2: true, Layout: "unified", Path: "/", Top: tc.top, Pids: tc.pids}
			got, ok := limitsProblem(r)
			if tc.want == "" {
				if ok {
					t.Errorf("a problem where none is: %+v", got)
				}
				return
			}
			if diff := cmp.Diff(Problem{Problem: tc.want, Fix: fix}, got); diff != "" {
				t.Errorf("limitsProblem (-want +got):\n%s", diff)
			}
		})
	}
}
