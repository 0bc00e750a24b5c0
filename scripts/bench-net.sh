#!/usr/bin/env bash
# What network mode allowlist costs, measured on this machine against a
# server on the host's loopback (nothing leaves 127.0.0.1):
#
#   launch       agentbox run --network allowlist -- /bin/true against
#                --network open and --network none (hyperfine; target: <= 1.5x open)
#   throughput   curl downloading 1 GiB directly on the host, and in the box
#                through the proxy by CONNECT and by plain HTTP
#                (target: >= 80% of direct)
#   latency      one connection with one small request and answer, directly
#                and through the proxy by CONNECT and SOCKS5: the difference is
#                what the proxy adds per connection (target: < 1 ms)
#
# Usage: scripts/bench-net.sh [launch runs] [throughput runs] [latency connections]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
runs=${1:-100}
truns=${2:-5}
conns=${3:-2000}
py=/usr/bin/python3 # the system's, which the box sees too
for tool in hyperfine curl bwrap "$py"; do
	command -v "$tool" >/dev/null || { echo "install $tool" >&2; exit 1; }
done

work=$(mktemp -d /var/tmp/agentbox-bench-net-XXXXXX)
chmod 755 "$work"
go build -trimpath -ldflags=-s -o "$work/agentbox" .
ab="$work/agentbox"
proj="$work/proj"
mkdir -p "$proj"
cd "$proj"

# The server: HTTP/1.1 on 127.0.0.1, one thread per connection. /big is
# 1 GiB sent with sendfile(2), so the server costs next to nothing; any
# other path is a 2-byte answer.
truncate -s 1G "$work/big"
cat > "$work/server.py" <<'PY'
import os, socket, sys, threading
big = sys.argv[1]
size = os.path.getsize(big)
ln = socket.socket()
ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ln.bind(("127.0.0.1", 0))
ln.listen(512)
print(ln.getsockname()[1], flush=True)
def serve(c):
    with c:
        buf = b""
        while b"\r\n\r\n" not in buf:
            b = c.recv(4096)
            if not b:
                return
            buf += b
        if buf.split(b" ", 2)[1] == b"/big":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
            with open(big, "rb") as f:
                c.sendfile(f)
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
while True:
    c, _ = ln.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
"$py" "$work/server.py" "$work/big" > "$work/port" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
while [ ! -s "$work/port" ]; do sleep 0.05; done
port=$(cat "$work/port")
allow=(--network allowlist --allow "localhost:$port")

# The latency client: N connections one after another, each with one
# request and its answer; prints microseconds per connection.
cat > "$work/client.py" <<'PY'
import socket, struct, sys, time
mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
req = b"GET /small HTTP/1.1\r\nHost: localhost\r\n\r\n"
def read_until(s, end):
    buf = b""
    while end not in buf:
        b = s.recv(4096)
        if not b:
            raise SystemExit("closed early: %r" % buf)
        buf += b
    return buf
def one():
    if mode == "direct":
        s = socket.create_connection(("127.0.0.1", port))
    else:
        s = socket.create_connection(("127.0.0.1", 3128))
        if mode == "connect":
            s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % port)
            if not read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 200"):
                raise SystemExit("CONNECT refused")
        else:
            name = b"localhost"
            s.sendall(b"\x05\x01\x00" + b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", port))
            r = b""
            while len(r) < 12:
                r += s.recv(12 - len(r))
            if r[3] != 0:
                raise SystemExit("SOCKS5 refused: %d" % r[3])
    s.sendall(req)
    read_until(s, b"ok")
    s.close()
for _ in range(100):
    one()
t = time.perf_counter()
for _ in range(n):
    one()
print("%.1f" % ((time.perf_counter() - t) / n * 1e6))
PY

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "== launch ($runs runs each)"
"$ab" run -- /bin/true # prepares agentbox's own folders once
hyperfine --warmup 10 --runs "$runs" --export-json "$work/launch.json" \
	-n open "$ab run --network open -- /bin/true" \
	-n none "$ab run --network none -- /bin/true" \
	-n allowlist "$ab run ${allow[*]} -- /bin/true" >/dev/null
"$py" - "$work/launch.json" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
for n in ("open", "none", "allowlist"):
    r = res[n]
    print(f"  {n:<10} median {r['median']*1000:6.2f} ms  mean {r['mean']*1000:6.2f} ms  stddev {r['stddev']*1000:5.2f}")
print(f"  allowlist / open = {res['allowlist']['median']/res['open']['median']:.2f}x   (target <= 1.5x)")
print(f"  allowlist / none = {res['allowlist']['median']/res['none']['median']:.2f}x")
PY

echo "== throughput, 1 GiB ($truns runs each, median)"
url="http://localhost:$port/big"
speed() { # prints MB/s
	awk '{printf "%.0f\n", $1/1e6}'
}
direct=$(for _ in $(seq "$truns"); do curl -sS --noproxy '*' -o /dev/null -w '%{speed_download}\n' "$url"; done | speed | median)
connect=$(for _ in $(seq "$truns"); do "$ab" run "${allow[@]}" -- curl -sS --noproxy '' -p -x http://127.0.0.1:3128 -o /dev/null -w '%{speed_download}\n' "$url"; done | speed | median)
plain=$(for _ in $(seq "$truns"); do "$ab" run "${allow[@]}" -- curl -sS --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{speed_download}\n' "$url"; done | speed | median)
echo "  direct         $direct MB/s"
echo "  proxy CONNECT  $connect MB/s  = $(awk -v a="$connect" -v b="$direct" 'BEGIN {printf "%.0f", 100*a/b}')% of direct   (target >= 80%)"
echo "  proxy plain    $plain MB/s  = $(awk -v a="$plain" -v b="$direct" 'BEGIN {printf "%.0f", 100*a/b}')% of direct"

echo "== latency per connection ($conns connections each, median of 3)"
d=$(for _ in 1 2 3; do "$py" "$work/client.py" direct "$port" "$conns"; done | median)
c=$(for _ in 1 2 3; do "$ab" run "${allow[@]}" -- "$py" "$work/client.py" connect "$port" "$conns"; done | median)
s=$(for _ in 1 2 3; do "$ab" run "${allow[@]}" -- "$py" "$work/client.py" socks5 "$port" "$conns"; done | median)
echo "  direct         $d us"
echo "  proxy CONNECT  $c us  (+$(awk -v a="$c" -v b="$d" 'BEGIN {printf "%.0f", a-b}') us per connection; target < 1000)"
echo "  proxy SOCKS5   $s us  (+$(awk -v a="$s" -v b="$d" 'BEGIN {printf "%.0f", a-b}') us per connection)"
