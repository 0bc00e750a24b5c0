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
#   intercepted  the same over TLS to a host the proxy reads (a secret goes to
#                it): throughput of 1 GiB and the cost of one connection with
#                one request, directly, tunnelled (CONNECT, unread) and
#                intercepted (TLS terminated with the run's authority, the
#                request read and re-framed, TLS again to the host)
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

# The intercepted case: a TLS server (Go, so that the server is not what
# limits the transfer) with a certificate from a test CA, which agentbox
# trusts through SSL_CERT_FILE (the roots it checks hosts against) and the
# box through CURL_CA_BUNDLE and SSL_CERT_FILE: when the proxy intercepts,
# agentbox sets both to the box's bundle, which holds the test CA too (it
# starts with what SSL_CERT_FILE named) and the run's own authority.
mkdir -p "$work/tlsserver"
cat > "$work/tlsserver/main.go" <<'GO'
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/textproto"
	"os"
	"strings"
	"time"
)

func main() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench roots"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	ca, _ = x509.ParseCertificate(caDER)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	leafDER, _ := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, key)
	os.WriteFile(os.Args[1], pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	block := make([]byte, 1<<20)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			tr := textproto.NewReader(bufio.NewReader(c))
			line, err := tr.ReadLine()
			if err != nil {
				return
			}
			if _, err := tr.ReadMIMEHeader(); err != nil {
				return
			}
			if strings.Contains(line, " /big ") {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", 1<<30)
				for i := 0; i < 1024; i++ {
					if _, err := c.Write(block); err != nil {
						return
					}
				}
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
		}()
	}
}
GO
(cd "$work/tlsserver" && printf 'module tlsserver\ngo 1.22\n' > go.mod && go build -o server .)
"$work/tlsserver/server" "$work/testca.pem" > "$work/tlsport" &
tlsserver=$!
trap 'kill $server $tlsserver 2>/dev/null; rm -rf "$work"' EXIT
while [ ! -s "$work/tlsport" ] || [ ! -s "$work/testca.pem" ]; do sleep 0.05; done
tport=$(cat "$work/tlsport")
export SSL_CERT_FILE="$work/testca.pem" CURL_CA_BUNDLE="$work/testca.pem" BENCH_KEY=sk-bench-0123456789abcdef
cat > "$work/secret.toml" <<TOML
version = 1
[network]
mode = "allowlist"
allow = ["127.0.0.1:$tport"]
[[network.secret]]
env = "BENCH_KEY"
hosts = ["127.0.0.1"]
TOML
tunnel=(--network allowlist --allow "127.0.0.1:$tport")
intercept=(--policy "$work/secret.toml")

# TLS latency client: as client.py, over TLS, trusting SSL_CERT_FILE.
cat > "$work/tlsclient.py" <<'PY'
import os, socket, ssl, sys, time
mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
req = b"GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: " + os.environ["BENCH_KEY"].encode() + b"\r\n\r\n"
def one():
    if mode == "direct":
        s = socket.create_connection(("127.0.0.1", port))
    else:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % port)
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(4096)
        if not buf.startswith(b"HTTP/1.1 200"):
            raise SystemExit("CONNECT refused: %r" % buf)
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    t.sendall(req)
    buf = b""
    while not buf.endswith(b"ok"):
        b = t.recv(4096)
        if not b:
            raise SystemExit("closed early: %r" % buf)
        buf += b
    t.close()
for _ in range(20):
    one()
t = time.perf_counter()
for _ in range(n):
    one()
print("%.1f" % ((time.perf_counter() - t) / n * 1e6))
PY

echo "== TLS: tunnelled and intercepted, 1 GiB ($truns runs each, median)"
turl="https://127.0.0.1:$tport/big"
tdirect=$(for _ in $(seq "$truns"); do curl -sS --noproxy '*' -o /dev/null -w '%{speed_download}\n' "$turl"; done | speed | median)
ttunnel=$(for _ in $(seq "$truns"); do "$ab" run "${tunnel[@]}" -- curl -sS --noproxy '' -p -x http://127.0.0.1:3128 -o /dev/null -w '%{speed_download}\n' "$turl"; done | speed | median)
tinter=$(for _ in $(seq "$truns"); do "$ab" run "${intercept[@]}" -- curl -sS --noproxy '' -p -x http://127.0.0.1:3128 -o /dev/null -w '%{speed_download}\n' "$turl"; done | speed | median)
echo "  direct         $tdirect MB/s"
echo "  tunnelled      $ttunnel MB/s  = $(awk -v a="$ttunnel" -v b="$tdirect" 'BEGIN {printf "%.0f", 100*a/b}')% of direct"
echo "  intercepted    $tinter MB/s  = $(awk -v a="$tinter" -v b="$tdirect" 'BEGIN {printf "%.0f", 100*a/b}')% of direct, $(awk -v a="$tinter" -v b="$ttunnel" 'BEGIN {printf "%.0f", 100*a/b}')% of tunnelled"

tconns=$((conns / 4))
echo "== TLS: latency per connection ($tconns connections each, median of 3)"
td=$(for _ in 1 2 3; do "$py" "$work/tlsclient.py" direct "$tport" "$tconns"; done | median)
tt=$(for _ in 1 2 3; do "$ab" run "${tunnel[@]}" -- "$py" "$work/tlsclient.py" connect "$tport" "$tconns"; done | median)
ti=$(for _ in 1 2 3; do "$ab" run "${intercept[@]}" -- "$py" "$work/tlsclient.py" connect "$tport" "$tconns"; done | median)
echo "  direct         $td us"
echo "  tunnelled      $tt us  (+$(awk -v a="$tt" -v b="$td" 'BEGIN {printf "%.0f", a-b}') us per connection)"
echo "  intercepted    $ti us  (+$(awk -v a="$ti" -v b="$td" 'BEGIN {printf "%.0f", a-b}') us per connection: a second TLS handshake, the request read and re-framed)"

