package cgroup

import (
	"fmt"
	"reflect"
	"testing"
)

// Samples of /proc/self/cgroup and the cgroup lines of /proc/self/mountinfo
// (other lines in between, as the kernel writes them).
const (
	// This development machine: v1 hierarchies plus an empty unified one.
	hybridCgroup = `9:name=systemd:/
8:pids:/
7:blkio:/
4:memory:/process_api/8b8c
1:cpu,cpuacct:/
0::/
`
	hybridMountinfo = `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	// Pure v2, a root shell on a console in the root cgroup.
	v2RootCgroup    = "0::/\n"
	v2RootMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
26 23 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// Pure v2, a desktop terminal under the systemd user manager, which
	// delegates user@1000.service to uid 1000.
	v2UserCgroup    = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1f.scope\n"
	v2UserMountinfo = `26 23 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A Docker container with a cgroup namespace and the default,
	// read-only cgroupfs.
	containerCgroup    = "0::/\n"
	containerMountinfo = `612 590 0:57 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
620 618 0:62 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate
`
	// A v1 container without a cgroup namespace: the mount shows only
	// the container's part of the tree, and a path with a space in it.
	v1ContainerCgroup    = "5:pids:/docker/abc\n4:memory:/elsewhere\n"
	v1ContainerMountinfo = `700 690 0:40 /docker/abc /sys/fs/cgroup/pids\040x rw,nosuid - cgroup cgroup rw,pids
701 690 0:41 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
`
)

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []procLine
	}{
		{"hybrid", hybridCgroup, []procLine{
			{9, []string{"name=systemd"}, "/"},
			{8, []string{"pids"}, "/"},
			{7, []string{"blkio"}, "/"},
			{4, []string{"memory"}, "/process_api/8b8c"},
			{1, []string{"cpu", "cpuacct"}, "/"},
			{0, nil, "/"},
		}},
		{"v2 root", v2RootCgroup, []procLine{{0, nil, "/"}}},
		{"v2 user", v2UserCgroup, []procLine{{0, nil, "/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1f.scope"}}},
		{"colon in path", "0::/a:b\n", []procLine{{0, nil, "/a:b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcCgroup(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, tc.want, got)
		})
	}
	for _, bad := range []string{"0:/", "x::/", "0::relative"} {
		if _, err := parseProcCgroup(bad); err == nil {
			t.Errorf("parseProcCgroup(%q): no error", bad)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []mountLine
	}{
		{"hybrid", hybridMountinfo, []mountLine{
			{"/", "/sys/fs/cgroup/cpu,cpuacct", false, "cgroup", []string{"rw", "cpu", "cpuacct"}},
			{"/", "/sys/fs/cgroup/memory", false, "cgroup", []string{"rw", "memory"}},
			{"/", "/sys/fs/cgroup/blkio", false, "cgroup", []string{"rw", "blkio"}},
			{"/", "/sys/fs/cgroup/pids", false, "cgroup", []string{"rw", "pids"}},
			{"/", "/sys/fs/cgroup/systemd", false, "cgroup", []string{"rw", "name=systemd"}},
			{"/", "/sys/fs/cgroup/unified", false, "cgroup2", []string{"rw"}},
		}},
		{"v2 root", v2RootMountinfo, []mountLine{
			{"/", "/sys/fs/cgroup", false, "cgroup2", []string{"rw", "nsdelegate", "memory_recursiveprot"}},
		}},
		{"container read-only", containerMountinfo, []mountLine{
			{"/", "/sys/fs/cgroup", true, "cgroup2", []string{"rw", "nsdelegate"}},
		}},
		{"v1 container", v1ContainerMountinfo, []mountLine{
			{"/docker/abc", "/sys/fs/cgroup/pids x", false, "cgroup", []string{"rw", "pids"}},
			{"/docker/abc", "/sys/fs/cgroup/memory", true, "cgroup", []string{"rw", "memory"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMountinfo(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, tc.want, got)
		})
	}
	if _, err := parseMountinfo("1 2 3:4 / /x rw no separator\n"); err == nil {
		t.Error("parseMountinfo: no error for a line without ' - '")
	}
}

func TestHierarchies(t *testing.T) {
	tests := []struct {
		name, cgroup, mountinfo string
		want                    []hierarchy
	}{
		{"hybrid", hybridCgroup, hybridMountinfo, []hierarchy{
			{Version: 1, Controllers: []string{"name=systemd"}, MountPoint: "/sys/fs/cgroup/systemd", Path: "/", Dir: "/sys/fs/cgroup/systemd"},
			{Version: 1, Controllers: []string{"pids"}, MountPoint: "/sys/fs/cgroup/pids", Path: "/", Dir: "/sys/fs/cgroup/pids"},
			{Version: 1, Controllers: []string{"blkio"}, MountPoint: "/sys/fs/cgroup/blkio", Path: "/", Dir: "/sys/fs/cgroup/blkio"},
			{Version: 1, Controllers: []string{"memory"}, MountPoint: "/sys/fs/cgroup/memory", Path: "/process_api/8b8c", Dir: "/sys/fs/cgroup/memory/process_api/8b8c"},
			{Version: 1, Controllers: []string{"cpu", "cpuacct"}, MountPoint: "/sys/fs/cgroup/cpu,cpuacct", Path: "/", Dir: "/sys/fs/cgroup/cpu,cpuacct"},
			{Version: 2, MountPoint: "/sys/fs/cgroup/unified", Path: "/", Dir: "/sys/fs/cgroup/unified"},
		}},
		{"v2 root", v2RootCgroup, v2RootMountinfo, []hierarchy{
			{Version: 2, MountPoint: "/sys/fs/cgroup", Path: "/", Dir: "/sys/fs/cgroup"},
		}},
		{"v2 user", v2UserCgroup, v2UserMountinfo, []hierarchy{
			{Version: 2, MountPoint: "/sys/fs/cgroup", Path: "/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1f.scope",
				Dir: "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1f.scope"},
		}},
		{"container read-only", containerCgroup, containerMountinfo, []hierarchy{
			{Version: 2, MountPoint: "/sys/fs/cgroup", ReadOnly: true, Path: "/", Dir: "/sys/fs/cgroup"},
		}},
		{"v1 container", v1ContainerCgroup, v1ContainerMountinfo, []hierarchy{
			{Version: 1, Controllers: []string{"pids"}, MountPoint: "/sys/fs/cgroup/pids x", Path: "/docker/abc", Dir: "/sys/fs/cgroup/pids x"},
			{Version: 1, Controllers: []string{"memory"}, MountPoint: "/sys/fs/cgroup/memory", ReadOnly: true, Path: "/elsewhere",
				Hidden: "/sys/fs/cgroup/memory shows the cgroup /docker/abc, which does not contain ours (/elsewhere)"},
		}},
		{"unmounted", "0::/a\n", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			procs, err := parseProcCgroup(tc.cgroup)
			if err != nil {
				t.Fatal(err)
			}
			mounts, err := parseMountinfo(tc.mountinfo)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, tc.want, hierarchies(procs, mounts))
		})
	}
}

func TestLocate(t *testing.T) {
	procs, _ := parseProcCgroup(hybridCgroup)
	mounts, _ := parseMountinfo(hybridMountinfo)
	hs := hierarchies(procs, mounts)
	tests := []struct {
		ctrl    string
		wantDir string
	}{
		{"pids", "/sys/fs/cgroup/pids"},
		{"memory", "/sys/fs/cgroup/memory/process_api/8b8c"},
		// Not bound to v1: whether v2 has it is read from cgroup.controllers.
		{"hugetlb", "/sys/fs/cgroup/unified"},
	}
	for _, tc := range tests {
		t.Run(tc.ctrl, func(t *testing.T) {
			h, err := locate(hs, tc.ctrl)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, tc.wantDir, h.Dir)
		})
	}
	if _, err := locate(hs[:1], "pids"); err == nil {
		t.Error("locate without a pids hierarchy: no error")
	}
}

func TestDescribe(t *testing.T) {
	v1 := &Group{parts: []*part{
		{version: 1, controllers: []string{"pids"}, cgpath: "/agentbox-1", settings: []string{"pids.max=220"}},
		{version: 1, controllers: []string{"memory"}, cgpath: "/process_api/x/agentbox-1",
			settings: []string{"memory.limit_in_bytes=268435456", "memory.memsw.limit_in_bytes=268435456"}},
	}}
	diff(t, "cgroup v1 pids:/agentbox-1 pids.max=220, memory:/process_api/x/agentbox-1 memory.limit_in_bytes=268435456 memory.memsw.limit_in_bytes=268435456",
		v1.Describe())
	v2 := &Group{parts: []*part{{version: 2, controllers: []string{"pids", "memory"}, cgpath: "/a/agentbox-1",
		settings: []string{"pids.max=40", "memory.max=1024", "memory.swap.max=0"}}}}
	diff(t, "cgroup v2 /a/agentbox-1 pids.max=40 memory.max=1024 memory.swap.max=0", v2.Describe())
	var none *Group
	diff(t, "no cgroup", none.Describe())
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:    "/a b",
		`/a\134b`:    `/a\b`,
		`/trailing\`: `/trailing\`,
		`/short\04`:  `/short\04`,
		`/plain`:     "/plain",
	} {
		if got := UnescapeMountinfo(in); got != want {
			t.Errorf("UnescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// diff fails t when want and got differ, as (-want +got).
func diff(t *testing.T, want, got any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("(-want +got):\n-%s\n+%s", fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", got))
	}
}
