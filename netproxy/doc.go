// Package netproxy is the network allowlist: the proxy that decides which
// hosts a sandboxed command may reach, and the bridge that carries the
// command's connections to it.
//
// The command runs in its own network namespace that has only a loopback
// interface (bubblewrap's --unshare-net). Outside the box, agentbox runs one
// Proxy on a unix socket in a private folder (mode 0700); that folder is
// bound into the box. Inside, the box's first process runs Bridge on
// 127.0.0.1:PORT, forwarding every connection unchanged to the socket. The
// command finds the proxy through HTTP_PROXY, HTTPS_PROXY and ALL_PROXY.
//
// The proxy speaks HTTP (absolute-URI requests and CONNECT) and SOCKS5 (no
// authentication, CONNECT, domain and address types) on the same socket,
// told apart by the first byte. It resolves names itself, so the box needs
// no DNS, and checks each host against Rules, then each address the name
// resolved to (see Rules.vet in resolve.go for why). Denials are answered in
// the protocol's own words: HTTP 403 with a one-line body naming the host and
// the reason, SOCKS5 reply 0x02.
//
// It fails closed: a program that ignores the proxy variables has no route
// out of the namespace at all, and one that uses them reaches only what the
// rules allow.
//
// Wiring, for the caller:
//
//   - outside the box: rules from Compile(allow, deny); p := Listen("", rules,
//     Options{Log: ..., AllowUID: os.Getuid()}); go p.Serve(); Close after
//     the command exits, then Stats for the denial count. Listen also removes
//     the folders that runs killed with SIGKILL left behind.
//   - bwrap: --unshare-net (the box's only interface is loopback: this is
//     what makes it fail closed) and --bind DIR DIR for DIR =
//     filepath.Dir(p.SocketPath()), so the socket has the same path inside.
//   - inside the box, in its first process: ln := net.Listen("tcp",
//     "127.0.0.1:PORT") (bwrap has brought lo up), then Bridge(ln, socketPath);
//     optionally Forward(ln2, socketPath, "localhost:3000") on
//     127.0.0.1:3000 for each explicitly allowed loopback service.
//   - the command's environment: HTTP_PROXY, HTTPS_PROXY and their
//     lower-case forms = http://127.0.0.1:PORT; ALL_PROXY and all_proxy =
//     socks5h://127.0.0.1:PORT (the "h": the proxy resolves names);
//     NO_PROXY and no_proxy = localhost,127.0.0.1.
//
// What does not belong here: reading policy files (package policy), the
// bwrap arguments and starting the box (package mount), and UDP, which the
// box simply does not have.
package netproxy
