package netproxy

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
)

// benchSize is the size of one transfer: the target is stated for
// 1 GiB.
const benchSize = 1 << 30

// BenchmarkThroughput downloads benchSize bytes from a local server,
// directly and through bridge and proxy (CONNECT), and reports MB/s.
func BenchmarkThroughput(b *testing.B) {
	block := make([]byte, 256<<10)
	source := serveTCP(b, "tcp", "127.0.0.1:0", func(c *net.TCPConn) {
		var n [8]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		for left := binary.BigEndian.Uint64(n[:]); left > 0; {
			k := min(left, uint64(len(block)))
			if _, err := c.Write(block[:k]); err != nil {
				return
			}
			left -= k
		}
		c.CloseWrite()
	})
	target := "example.test:" + strconv.Itoa(source.port())
	download := func(b *testing.B, c net.Conn, r io.Reader) {
		defer c.Close()
		c.Write(binary.BigEndian.AppendUint64(nil, benchSize))
		buf := make([]byte, 256<<10)
		var n int64
		for {
			k, err := r.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		if n != benchSize {
			b.Fatalf("got %d bytes, want %d", n, benchSize)
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(benchSize)
		for b.Loop() {
			c, err := net.Dial("tcp", source.ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			download(b, c, c)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		box := startBox(b, []string{"example.test"}, nil, boxOptions{})
		b.SetBytes(benchSize)
		for b.Loop() {
			c, br, resp := connectVia(b, box.addr, target)
			if resp.StatusCode != 200 {
				b.Fatalf("CONNECT status %d", resp.StatusCode)
			}
			download(b, c, br)
		}
	})
}

// BenchmarkConnect measures one connection with a one-byte round trip to an
// echo server: directly, and through bridge and proxy by CONNECT and by
// SOCKS5 (name resolved by the proxy). The difference is what the proxy adds
// per connection.
func BenchmarkConnect(b *testing.B) {
	srv := serveTCP(b, "tcp", "127.0.0.1:0", echo)
	port := srv.port()
	target := "example.test:" + strconv.Itoa(port)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", srv.ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(b, c, c, "x")
			c.Close()
		}
	})
	box := startBox(b, []string{"example.test"}, nil, boxOptions{})
	b.Run("connect", func(b *testing.B) {
		for b.Loop() {
			c, br, resp := connectVia(b, box.addr, target)
			if resp.StatusCode != 200 {
				b.Fatalf("CONNECT status %d", resp.StatusCode)
			}
			roundTrip(b, c, br, "x")
			c.Close()
		}
	})
	b.Run("socks5", func(b *testing.B) {
		for b.Loop() {
			c, br, code := socksVia(b, box.addr, socksName("example.test"), port)
			if code != socksOK {
				b.Fatalf("SOCKS5 reply %#x", code)
			}
			roundTrip(b, c, br, "x")
			c.Close()
		}
	})
}
