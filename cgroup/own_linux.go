package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Own returns the calling process's cgroup for controller c ("pids" or
// "memory"), as /proc/self/cgroup names it, and its limit there: pids.max,
// memory.max (v2) or memory.limit_in_bytes (v1); 0 when there is none
// ("max"). A process in a box checks with it that the box's limits are in
// force (agentbox verify).
func Own(c string) (string, uint64, error) {
	hs, err := load()
	if err != nil {
		return "", 0, err
	}
	h, err := locate(hs, c)
	if err != nil {
		return "", 0, err
	}
	if h.Dir == "" {
		return h.Path, 0, fmt.Errorf("%s", h.Hidden)
	}
	file := c + ".max"
	if c == "memory" && h.Version == 1 {
		file = "memory.limit_in_bytes"
	}
	data, err := os.ReadFile(filepath.Join(h.Dir, file))
	if err != nil {
		return h.Path, 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return h.Path, 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return h.Path, n, err
}
