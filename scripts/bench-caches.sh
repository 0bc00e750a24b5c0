#!/usr/bin/env bash
# What a box's private package and build caches cost the first build of a
# new project, against the same build on the host with its warm caches.
# Every box run is in a new project, so it starts with empty private
# caches (its state folder is a temporary one); the host's caches are
# yours, warmed once before the rounds and only read by the boxes.
#
#   scripts/bench-caches.sh [rounds]      (default 5)
#
# Each round runs every command once, in a new random order, each in a
# fresh copy of its project, so load on a shared machine moves both sides
# of a pair together; a ratio is the median of the rounds' ratios. The
# goal, PASS or MISS:
#
#   go build, a module without dependencies: box vs host     <= 1.5x
#   go build, a module with one dependency:  box vs host     <= 1.5x
#
# and, for information: the same box build with the host's caches not
# read (how every first build went before; one round: a cold build of the
# standard library), npm ci of a lockfile, pip install and cargo build
# where their registries are reachable (each says why when skipped). A
# report, not a test: it exits 0 whatever the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
rounds=${1:-5}
command -v go >/dev/null || { echo "bench-caches: go is not installed; nothing measured" >&2; exit 0; }
work=$(mktemp -d /var/tmp/agentbox-caches-XXXXXX)
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -o "$work/agentbox" .
ab="$work/agentbox"
# The boxes' own state (private caches, /tmp, logs) is temporary; the
# host's caches are the real ones.
export XDG_STATE_HOME="$work/state"
export GOTOOLCHAIN=local
tpl="$work/templates"
mkdir -p "$tpl/nodep" "$tpl/dep"
cat >"$tpl/nodep/go.mod" <<'EOF'
module example.com/nodep

go 1.24
EOF
cat >"$tpl/nodep/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
)

func main() {
	u, _ := url.Parse("https://example.com/a?b=c")
	b, _ := json.Marshal(map[string]string{"host": u.Host})
	fmt.Println(string(b), len(os.Args))
}
EOF
cat >"$tpl/dep/go.mod" <<'EOF'
module example.com/dep

go 1.24

require github.com/google/go-cmp v0.7.0
EOF
grep '^github.com/google/go-cmp v0.7.0' go.sum >"$tpl/dep/go.sum"
cat >"$tpl/dep/main.go" <<'EOF'
package main

import (
	"fmt"

	"github.com/google/go-cmp/cmp"
)

func main() { fmt.Println(cmp.Diff([]int{1, 2}, []int{1, 3})) }
EOF
# A policy that keeps the box's go from reading the host's caches: how a
# first build went before it could.
cat >"$work/noread.toml" <<'EOF'
[env.set]
GOCACHEPROG = ""
GOPROXY = "https://proxy.golang.org,direct"
EOF
# Warm the host's caches for both modules (and fetch the dependency).
for m in nodep dep; do (cd "$tpl/$m" && go build -o /dev/null .); done
for m in nodep dep; do (cd "$tpl/$m" && git init -q .); done

npm_ok=""
if command -v npm >/dev/null && timeout 20 npm ping >/dev/null 2>&1; then
	mkdir -p "$tpl/npm"
	echo '{"name":"bench","version":"1.0.0","private":true,"dependencies":{"is-number":"7.0.0","chalk":"4.1.2","ms":"2.1.3","semver":"7.6.3","commander":"12.1.0"}}' >"$tpl/npm/package.json"
	(cd "$tpl/npm" && npm install --package-lock-only --no-audit --no-fund >/dev/null 2>&1 && git init -q . && cp -r . "$work/npm-warm" && cd "$work/npm-warm" && npm ci --no-audit --no-fund >/dev/null 2>&1) && npm_ok=1
fi
pip_ok=""
if command -v python3 >/dev/null && python3 -m venv "$work/venv" >/dev/null 2>&1 &&
	timeout 30 "$work/venv/bin/pip" download --no-deps -d "$work/pipdl" six >/dev/null 2>&1; then
	mkdir -p "$tpl/pip" && (cd "$tpl/pip" && git init -q .) && pip_ok=1
fi
cargo_ok=""
if command -v cargo >/dev/null; then
	mkdir -p "$tpl/cargo/src"
	printf '[package]\nname = "bench"\nversion = "0.1.0"\nedition = "2021"\n' >"$tpl/cargo/Cargo.toml"
	echo 'fn main() { println!("{}", std::env::args().count()); }' >"$tpl/cargo/src/main.rs"
	(cd "$tpl/cargo" && git init -q . && cargo build -q --offline) >/dev/null 2>&1 && cargo_ok=1
fi

python3 - "$rounds" "$ab" "$work" "$npm_ok" "$pip_ok" "$cargo_ok" <<'PY'
import os, random, shutil, statistics, subprocess, sys, time
rounds, ab, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
npm_ok, pip_ok, cargo_ok = sys.argv[4] == "1", sys.argv[5] == "1", sys.argv[6] == "1"
tpl = os.path.join(work, "templates")
n = [0]

def fresh(name):
    n[0] += 1
    d = os.path.join(work, "p", "%s-%d" % (name, n[0]))
    shutil.copytree(os.path.join(tpl, name), d, symlinks=True)
    return d

def timed(cmd, cwd):
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.stderr.write("bench-caches: %s failed in %s:\n%s\n" % (" ".join(cmd), cwd, r.stderr.decode(errors="replace")[-2000:]))
        return None
    return dt

box = [ab, "run", "--"]
pip = os.path.join(work, "venv", "bin", "pip")
pairs = {  # name: (template, host command, box command)
    "go-nodep": ("nodep", ["go", "build", "-o", "app", "."], box + ["go", "build", "-o", "app", "."]),
    "go-dep": ("dep", ["go", "build", "-o", "app", "."], box + ["go", "build", "-o", "app", "."]),
}
if npm_ok:
    pairs["npm"] = ("npm", ["npm", "ci", "--no-audit", "--no-fund"], box + ["npm", "ci", "--no-audit", "--no-fund"])
if pip_ok:
    cmd = [pip, "install", "--no-deps", "--target", "t", "six", "idna", "certifi"]
    pairs["pip"] = ("pip", cmd, box + cmd)
    subprocess.run(cmd[:4] + ["warm"] + cmd[5:], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if cargo_ok:
    pairs["cargo"] = ("cargo", ["cargo", "build", "-q", "--offline"], box + ["cargo", "build", "-q", "--offline"])

times = {k: ([], []) for k in pairs}
for r in range(rounds):
    jobs = [(k, side) for k in pairs for side in (0, 1)]
    random.shuffle(jobs)
    for k, side in jobs:
        name, host, boxed = pairs[k]
        dt = timed(boxed if side else host, fresh(name))
        if dt is not None:
            times[k][side].append(dt)

def ratio(k):
    h, b = times[k]
    rs = [bb / hh for hh, bb in zip(h, b)]
    return statistics.median(rs) if rs else None, statistics.median(h) if h else None, statistics.median(b) if b else None

print("bench-caches: %d rounds, load average %s at the end" % (rounds, open("/proc/loadavg").read().split()[0]))
print("%-58s %9s %9s %7s  %s" % ("first build in a new project (median)", "host s", "box s", "ratio", "goal"))
labels = {"go-nodep": "go build, a module without dependencies", "go-dep": "go build, a module with one dependency (go-cmp)",
          "npm": "npm ci, 5 packages from a lockfile (for information)", "pip": "pip install of 3 packages (for information)",
          "cargo": "cargo build, a crate without dependencies (for information)"}
for k in pairs:
    rt, h, b = ratio(k)
    if rt is None:
        print("%-58s  failed" % labels[k])
        continue
    goal = ""
    if k.startswith("go-"):
        goal = "<= 1.5: %s" % ("met" if rt <= 1.5 else "missed")
    print("%-58s %9.2f %9.2f %7.2f  %s" % (labels[k], h, b, rt, goal))
for k, why in (("npm", "npm or its registry is not reachable"), ("pip", "PyPI is not reachable"), ("cargo", "cargo is not installed")):
    if k not in pairs:
        print("%-58s  skipped: %s" % (labels[k], why))

# Before: the box's go did not read the host's caches. One round.
d = fresh("nodep")
b = timed([ab, "run", "--policy", os.path.join(work, "noread.toml"), "--", "go", "build", "-o", "app", "."], d)
h = timed(["go", "build", "-o", "app", "."], fresh("nodep"))
if b and h:
    print("%-58s %9.2f %9.2f %7.2f  (one round)" % ("for information: the same without reading the host's caches", h, b, b / h))
PY
