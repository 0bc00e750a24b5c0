// Package netproxy is the network allowlist: the proxy that decides which
// hosts a sandboxed command may reach, and the relay that hands the
// command's connections to it.
//
// The command runs in its own network namespace that has only a loopback
// interface (bubblewrap's --unshare-net). Before the box starts, agentbox
// creates a connected pair of unix sockets (Pair): it keeps one end and
// passes the other to the box's first process, agentbox's own init, as an
// inherited descriptor. Inside, the init listens on 127.0.0.1:PORT and runs
// Relay, which sends each accepted TCP connection's descriptor over the pair
// (SCM_RIGHTS) and closes its own copy. Outside, the Proxy receives the
// descriptors (Serve) and talks to each client's TCP socket directly: a
// socket stays in the box's network namespace, but its descriptor works from
// the host. So there is one relay, the proxy's own copy between the client
// and the upstream server (splice(2), as both are TCP), and no socket file:
// nothing to bind into the box, to protect with a private folder, or to leave
// behind when agentbox is killed. The command finds the proxy through
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY.
//
// The proxy speaks HTTP (absolute-URI requests and CONNECT, one request per
// connection: see http.go) and SOCKS5 (no authentication, CONNECT, domain
// and address types) on the same port, told apart by the first byte. It resolves names itself, so the box needs no DNS,
// and checks each host against Rules, then each address the name resolved to
// (see Rules.vet in resolve.go for why). Denials are answered in the
// protocol's own words: HTTP 403 with a one-line body naming the host and the
// reason, SOCKS5 reply 0x02.
//
// It fails closed: a program that ignores the proxy variables has no route
// out of the namespace at all, and one that uses them reaches only what the
// rules allow. When the proxy is gone, the relay closes every connection.
//
// Port forwards: programs honour NO_PROXY=localhost and so never send
// localhost through the proxy. For a host service the policy allows
// explicitly ("localhost:3000", issue 5 item 5) the init also listens on
// 127.0.0.1:3000 in the box and relays those connections with a tag that
// names the forward (Options.Forward); the proxy connects them to the target,
// checked by the rules like any other request. A forward's port below 1024
// the init may not bind itself (it has no capability in the box, as root
// neither): it hands the unbound socket to agentbox, which binds it
// (HostBind; the messages are in pair_linux.go).
//
// Beyond the allowlist (each in its own file):
//
//   - upstream.go: behind a corporate proxy (Options.Upstream) the proxy
//     decides as always and then reaches allowed hosts through the
//     upstream with CONNECT, which resolves the names.
//   - pair_linux.go, publish.go: a published port's connections reach the
//     box's own loopback on sockets the init makes when asked and agentbox
//     connects (Proxy.DialBox); the init opens nothing.
//   - secret.go, intercept.go, body.go, ca.go: for the hosts a secret goes to
//     or request rules cover, the proxy terminates TLS with the run's own
//     Authority and reads requests one by one: placeholders become values
//     (and back in answers), requests are checked by method and path, and a
//     placeholder on its way anywhere else is refused. Every other
//     connection is tunnelled unread.
//
// Wiring, for the caller:
//
//   - outside the box: rules from Compile(allow, deny); p := New(rules,
//     Options{Log: ..., Forward: ...}); host, box := Pair(); pass box to the
//     box as an inherited fd and close it here; go p.Serve(host); after the
//     box has ended, Close, then Stats for the denial count.
//   - bwrap: --unshare-net (the box's only interface is loopback: this is
//     what makes it fail closed).
//   - inside the box, in its first process, before the command starts:
//     c := Channel(fd); ln := net.Listen("tcp", "127.0.0.1:PORT") (bwrap has
//     brought lo up); go Relay(ln, c, 0); and Relay(ln_i, c, i) on
//     127.0.0.1:PORT_i for forward i.
//   - the command's environment: HTTP_PROXY, HTTPS_PROXY and their
//     lower-case forms = http://127.0.0.1:PORT; ALL_PROXY and all_proxy =
//     socks5h://127.0.0.1:PORT (the "h": the proxy resolves names);
//     NO_PROXY and no_proxy = localhost,127.0.0.1.
//
// What does not belong here: reading policy files (package policy), the
// bwrap arguments and starting the box (package mount), and UDP, which the
// box simply does not have.
package netproxy
