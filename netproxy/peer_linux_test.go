package netproxy

import (
	"net"
	"net/netip"
	"os"
	"testing"
)

func TestParseSockAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"0000000000000000FFFF00000100007F:0050", "[::ffff:127.0.0.1]:80"},
		{"00000000000000000000000001000000:0016", "[::1]:22"},
	} {
		got, err := parseSockAddr(tc.in)
		if err != nil || got.String() != tc.want {
			t.Errorf("parseSockAddr(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "XX00007F:0050", "0100007F:ZZ"} {
		if _, err := parseSockAddr(bad); err == nil {
			t.Errorf("parseSockAddr(%q) did not fail", bad)
		}
	}
}

// A real connection on the loopback is found, with this process's uid.
func TestSameUser(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if err := SameUser(os.Getuid())(server); err != nil {
		t.Errorf("this process's own connection: %v", err)
	}
	if err := SameUser(os.Getuid() + 4242)(server); err == nil {
		t.Error("another uid was let through")
	}
	if _, err := socketOwner(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")); err == nil {
		t.Error("a socket that does not exist was found")
	}
}
